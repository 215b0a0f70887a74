"""HttpDaemon against the real app in-process, running cases: the happy path
(tests/unit/test_native.py has the answers that run nothing, and the faults)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

from unit.test_native import collect, with_app

from ssebench.core.case import CaseRun
from ssebench.core.daemons.native import HttpDaemon
from ssebench.core.protocol import Health
from ssebench.plugins.build import BUILD
from ssebench.plugins.functional import FUNCTIONAL
from ssebench.plugins.poc import POCS


def _timeless(result: CaseRun) -> CaseRun:
    assert 0 <= result.seconds < 10
    assert len(result.log_id) == 32
    return dataclasses.replace(result, key="", seconds=0.0, log_id="-")


def test_happy_path_against_the_real_app(tmp_path: Path) -> None:
    async def job(daemon: HttpDaemon) -> list[Any]:
        health = await daemon.health()
        counts = await daemon.begin([BUILD, POCS, FUNCTIONAL])
        timeouts = dict(daemon.case_timeouts)
        built = await daemon.run_case(BUILD, 0)
        built_log = await collect(daemon, built)
        poc1 = await daemon.run_case(POCS, 1)
        poc1_log = await collect(daemon, poc1)
        failed = await daemon.run_case(FUNCTIONAL, 0)
        failed_log = await collect(daemon, failed)
        return [
            health,
            counts,
            timeouts,
            (_timeless(built), built_log),
            (_timeless(poc1), poc1_log),
            (_timeless(failed), failed_log),
        ]

    assert with_app(tmp_path, 1, job) == [
        Health(status="ok", difficulty=1),
        {"build": 1, "pocs": 2, "functional": 1},
        {"build": 30.0, "pocs": 20.0, "functional": 3600.0},
        (
            CaseRun(0, None, False, 0.0, index=0, passed=True, log_id="-", log_size=13),
            b"built\x00\xff\nwarn\n",
        ),
        (CaseRun(None, 11, False, 0.0, index=1, passed=False, log_id="-", log_size=5), b"poc1\n"),
        (CaseRun(2, None, False, 0.0, index=0, passed=False, log_id="-", log_size=0), b""),
    ]


def test_parts_of_a_log_are_read_by_range(tmp_path: Path) -> None:
    """The tail rule reads a long log's head and end only: Range requests the real app answers
    with exactly those bytes."""

    async def job(daemon: HttpDaemon) -> list[bytes]:
        built = await daemon.run_case(BUILD, 0)  # b"built\x00\xff\nwarn\n"
        source = await daemon.open_log(built)
        reads = [(0, 5), (5, 3), (9, 100), (12, 1), (13, 5), (0, 13)]
        return [await asyncio.to_thread(source.read, *where) for where in reads]

    parts = with_app(tmp_path, 1, job)
    assert parts == [b"built", b"\x00\xff\n", b"arn\n", b"\n", b"", b"built\x00\xff\nwarn\n"]
