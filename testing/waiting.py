"""Waiting until something holds: the one loop the tests and benchmarks share."""

from __future__ import annotations

import time
from collections.abc import Callable
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
