"""Progress as agents' clients see it over real HTTP: heartbeats while a quiet build runs and
while a call waits for another, and a last notification equal to the total, every time.

Clients give up on a quiet call (Claude Code after 300 s without a notification), so the gaps
between notifications are measured, with the official SDK's client and fastmcp's.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import fastmcp
import mcp
import pytest

from ssebench.testing.servers import clean_env, free_port, start_server
from ssebench.testing.waiting import wait_for_async

pytestmark = pytest.mark.timeout(120)

INTERVAL = 2.0
SLACK = 1.0  # a loaded machine's scheduling delay, on top of the interval
QUIET_SECONDS = 10
PASSED_AT_3 = (
    "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n\n"
    "Not available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, functional tests. "
    "Nothing is reported about them. Without the PoCs, this result does not show whether the "
    "vulnerability is fixed."
)
INTERNAL_FAILURE = (
    "An internal testing failure occurred. Your patch is not responsible for this failure."
)
NAMES = {"build": 3, "PoCs": 1, "intent tests": 0, "functional tests": 2}  # name: max level


@dataclass(frozen=True)
class Note:
    at: float
    progress: float
    total: float | None
    message: str


async def call(client: str, url: str, notes: list[Note]) -> str:
    """One test_patch call with `client`, every progress notification kept with its time."""

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notes.append(Note(time.monotonic(), progress, total, message or ""))

    if client == "fastmcp":
        async with fastmcp.Client(url) as session:
            result = await session.call_tool_mcp("test_patch", {}, progress_handler=on_progress)
    else:
        async with mcp.Client(url) as session:
            result = await session.call_tool("test_patch", {}, progress_callback=on_progress)
    assert [block.type for block in result.content] == ["text"]
    return str(result.content[0].text)


def assert_well_formed(notes: list[Note]) -> None:
    """Increasing values, one total throughout, and the last notification reaching it."""
    values = [note.progress for note in notes]
    assert values == sorted(set(values)), values
    totals = {note.total for note in notes if note.total is not None}
    assert len(totals) == 1, totals
    assert (notes[-1].progress, notes[-1].total, notes[-1].message) == (
        *totals,
        *totals,
        "finished",
    )


def gaps(notes: list[Note], start: float) -> list[float]:
    times = [start, *(note.at for note in notes)]
    return [round(b - a, 2) for a, b in pairwise(times)]


async def _until(condition: Callable[[], bool], limit: float = 30) -> None:
    await wait_for_async(condition, limit, "the first call's build started", 0.02)


def test_heartbeats_while_a_quiet_build_runs_and_while_a_call_waits(
    tmp_path: Path, serve: Any
) -> None:
    """The SDK's call runs a 10 s build that prints nothing; fastmcp's call, made meanwhile,
    waits for it and then runs its own. Neither client goes more than an interval unheard."""
    task = tmp_path / "quiet"
    (task / "src").mkdir(parents=True)
    build = f'[checks.build]\nrun = "sleep {QUIET_SECONDS}; echo built"\n'
    (task / "task.toml").write_text(f'source = "src"\n{build}')
    interval = ["--progress-interval", str(INTERVAL)]
    server = serve(args=["--task", str(task), "--difficulty", "3", *interval])
    first: list[Note] = []
    second: list[Note] = []

    async def both() -> tuple[str, str]:
        running = asyncio.create_task(call("mcp-sdk", server.url, first))
        await _until(lambda: any(n.message == "build: started" for n in first))
        queued = asyncio.create_task(call("fastmcp", server.url, second))
        return await running, await queued

    assert asyncio.run(both()) == (PASSED_AT_3, PASSED_AT_3)
    for notes in (first, second):
        assert_well_formed(notes)
        started = next(i for i, n in enumerate(notes) if n.message == "build: started")
        passed = next(i for i, n in enumerate(notes) if n.message == "build: passed")
        beats = notes[started + 1 : passed]
        assert all(re.fullmatch(r"build: running, \d+s", n.message) for n in beats), beats
        build_gaps = gaps(notes[started + 1 : passed + 1], notes[started].at)
        print(f"\ngaps during the quiet build (s): {build_gaps}")
        assert len(beats) >= QUIET_SECONDS // INTERVAL - 1
        assert max(build_gaps) <= INTERVAL + SLACK
        assert min(build_gaps[:-1]) >= INTERVAL - 0.1  # heartbeats, not a flood
    before = second[: next(i for i, n in enumerate(second) if n.message == "build: started")]
    # Once the first call ends, the second may be heard again before its build starts (on a
    # loaded machine its first request to the daemon can take an interval): "starting, 0s ago".
    waiting = [n for n in before if not re.fullmatch(r"starting, \d+s ago", n.message)]
    assert before[: len(waiting)] == waiting
    assert waiting[0].message == "waiting for another test_patch call"
    assert all(
        re.fullmatch(r"waiting for another test_patch call, \d+s", n.message) for n in waiting[1:]
    ), [n.message for n in before]
    wait_gaps = gaps(waiting[1:], waiting[0].at)
    print(f"gaps while waiting (s): {wait_gaps}")
    assert len(waiting) >= 3
    assert max(wait_gaps) <= INTERVAL + SLACK


@pytest.mark.parametrize("level", range(5))
@pytest.mark.parametrize("kind", ["passing", "failing"])
def test_the_last_notification_reaches_the_total(
    shared_servers: Any, kind: str, level: int
) -> None:
    """At every level, passing or failing (build gate, PoC stop, coverage): values increase,
    the last equals the total, and only checks the level enables are named."""
    server = shared_servers(kind, level)
    notes: list[Note] = []
    asyncio.run(call("mcp-sdk", server.url, notes))
    assert_well_formed(notes)
    withheld = [name for name, top in NAMES.items() if level > top]
    assert not [n.message for n in notes if any(name in n.message for name in withheld)]
    if level == 4:  # nothing runs: the report is the one step
        assert [(n.progress, n.total, n.message) for n in notes] == [(1, 1, "finished")]


def test_the_exact_notifications_of_a_passing_call(shared_servers: Any) -> None:
    """Two cases and the report: 3 steps in all; a check's start between cases adds half."""
    notes: list[Note] = []
    asyncio.run(call("fastmcp", shared_servers("passing", 2).url, notes))
    assert [(n.progress, n.total, n.message) for n in notes] == [
        (0, 3, "build: started"),
        (1, 3, "build: passed"),
        (1.5, 3, "functional tests: started"),
        (2, 3, "functional tests: passed"),
        (3, 3, "finished"),
    ]


@pytest.mark.parametrize("client", ["mcp-sdk", "fastmcp"])
def test_an_internal_failure_still_ends_at_the_total(tmp_path: Path, client: str) -> None:
    """Sidecar mode with nothing at the daemon's address: the call fails inside, not the patch."""
    dead = f"http://127.0.0.1:{free_port()}"
    env = clean_env(tmp_path, SSE_DAEMON_URL=dead)
    server = start_server(tmp_path, ["--daemon-api", "native"], env=env, embedded=False)
    notes: list[Note] = []
    try:
        assert asyncio.run(call(client, server.url, notes)) == INTERNAL_FAILURE
    finally:
        server.stop()
    assert [(n.progress, n.total, n.message) for n in notes] == [(1, 1, "finished")]
