"""Waiting until something holds, the one loop the tests and benchmarks share, and finding
what a daemon made (its runner copy)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


class NeverHappened(AssertionError):
    """What was waited for did not come in time (an assertion: the test fails, saying what)."""


def wait_for(found: Callable[[], T | None], limit: float, what: str, step: float = 0.01) -> T:
    """`found()`'s first answer that is neither None nor False, asked every `step` seconds for
    up to `limit` seconds; NeverHappened naming `what` after that."""
    deadline = time.monotonic() + limit
    while True:
        answer = found()
        if answer is not None and answer is not False:
            return answer
        if time.monotonic() > deadline:
            raise NeverHappened(f"{what}: not there after {limit:g} s")
        time.sleep(step)


def runner_tree(env: Mapping[str, str]) -> Path | None:
    """The tree the cases of the one daemon started with `env` (clean_env's) run on: its
    runner copy, where what a build writes lies, never in the task's own tree; None before
    the daemon made it."""
    found = sorted(Path(env["TMPDIR"]).glob("ssebench-*/ssebench-runner-*/*"))
    return found[0] if found else None
