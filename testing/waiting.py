"""Waiting until something holds, the one loop the tests and benchmarks share (in a thread or
in an event loop), and finding what a daemon made (its runner copy).

A meta-test (tests/unit/test_layers.py) refuses a loop that sleeps anywhere else in tests/ or
testing/: a wait written by hand drifts (no limit, a limit that names nothing, a process that
died unnoticed), this one says what never came.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    import subprocess

T = TypeVar("T")
# What was waited for: a text, or a function asked only when the wait fails (to say what is
# there instead, say).
What = str | Callable[[], str]


class NeverHappened(AssertionError):
    """What was waited for did not come in time (an assertion: the test fails, saying what)."""


class _Wait:
    """One wait's limit, and its verdict on each answer."""

    def __init__(self, limit: float, what: What, alive: subprocess.Popen[Any] | None) -> None:
        self.limit = limit
        self.deadline = time.monotonic() + limit
        self.what = what
        self.alive = alive

    def over(self, answer: object) -> bool:
        """Whether `answer` ends the wait (it is true: an empty list is no answer yet);
        NeverHappened once the time is up or the process it depends on has ended."""
        if answer:
            return True
        if self.alive is not None and (status := self.alive.poll()) is not None:
            raise NeverHappened(f"{self._said()}: its process ended first (status {status})")
        if time.monotonic() > self.deadline:
            raise NeverHappened(f"{self._said()}: not there after {self.limit:g} s")
        return False

    def _said(self) -> str:
        return self.what() if callable(self.what) else self.what


def wait_for(
    found: Callable[[], T | None],
    limit: float,
    what: What,
    step: float = 0.01,
    *,
    alive: subprocess.Popen[Any] | None = None,
) -> T:
    """`found()`'s first true answer, asked every `step` seconds for up to `limit` seconds;
    NeverHappened naming `what` after that, or as soon as the process `alive` (what would make
    it come) has ended."""
    wait = _Wait(limit, what, alive)
    while not wait.over(answer := found()):
        time.sleep(step)
    return cast(T, answer)


async def wait_for_async(
    found: Callable[[], T | None],
    limit: float,
    what: What,
    step: float = 0.01,
    *,
    alive: subprocess.Popen[Any] | None = None,
) -> T:
    """`wait_for` inside an event loop, which runs between the asks."""
    wait = _Wait(limit, what, alive)
    while not wait.over(answer := found()):
        await asyncio.sleep(step)
    return cast(T, answer)


def runner_tree(env: Mapping[str, str]) -> Path | None:
    """The tree the cases of the one daemon started with `env` (clean_env's) run on: its
    runner copy, where what a build writes lies, never in the task's own tree; None before
    the daemon made it."""
    found = sorted(Path(env["TMPDIR"]).glob("ssebench-*/ssebench-runner-*/*"))
    return found[0] if found else None
