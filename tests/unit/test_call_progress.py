"""A call's progress values over very long runs: they keep increasing, never reach the next
whole case while one runs, and only the last notification reaches the total.

A clock that jumps 20 s at every reading stands in for days of a quiet build.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

import pytest

from ssebench.core.server.progress import CallProgress, duration
from ssebench.testing.waiting import wait_for_async

Sent = list[tuple[float, float | None, str]]


def _jumping_clock(step: float) -> Callable[[], float]:
    ticks = itertools.count()
    return lambda: next(ticks) * step


async def _quiet_until(progress_sent: Sent, count: int) -> None:
    await wait_for_async(lambda: len(progress_sent) >= count, 60, f"{count} notifications", 0)


def test_a_week_of_heartbeats_stays_below_the_next_case_and_the_total() -> None:
    sent: Sent = []

    async def notify(progress: float, total: float | None, message: str) -> None:
        sent.append((progress, total, message))

    async def run() -> None:
        progress = CallProgress(notify, 20.0, clock=_jumping_clock(20.0))
        async with progress.beating():
            await progress.step(0, 2, "build: started")
            await _quiet_until(sent, 30_000)  # a heartbeat every 20 s for a week
            await progress.step(1, 2, "build: passed")
            await progress.step(1, 2, "functional tests: started")
            await _quiet_until(sent, 30_100)
            await progress.step(2, 2, "functional tests: FAILED")
        await progress.finish()

    asyncio.run(run())
    values = [value for value, _, _ in sent]
    assert all(a < b for a, b in itertools.pairwise(values))
    build = [value for value, _, message in sent if message.startswith("build: running")]
    assert len(build) >= 29_000 and max(build) < 1
    functional = [v for v, _, message in sent if message.startswith("functional tests: running")]
    assert functional and min(functional) > 1.5 and max(functional) < 2
    assert {total for _, total, _ in sent} == {3}
    assert sent[-1] == (3, 3, "finished")
    assert [v for v, _, _ in sent].count(3) == 1


def test_waiting_then_nothing_to_run_ends_at_one() -> None:
    """A call that waited for another and then ran nothing (level 4, or a failure before the
    first case): its waiting notifications have no total, its last is 1 of 1."""
    sent: Sent = []

    async def notify(progress: float, total: float | None, message: str) -> None:
        sent.append((progress, total, message))

    async def run() -> None:
        lock = asyncio.Lock()
        await lock.acquire()
        progress = CallProgress(notify, 20.0, clock=_jumping_clock(20.0))
        async with progress.beating():
            waiter = asyncio.create_task(_enter(progress, lock))
            await _quiet_until(sent, 5)
            lock.release()
            await waiter
        await progress.finish()

    asyncio.run(run())
    assert sent[0] == (0, None, "waiting for another test_patch call")
    assert [message.split(",")[0] for _, _, message in sent[1:5]] == [
        "waiting for another test_patch call"
    ] * 4
    assert all(total is None for _, total, _ in sent[:-1])
    assert sent[-1] == (1, 1, "finished")


async def _enter(progress: CallProgress, lock: asyncio.Lock) -> None:
    async with progress.turn(lock):
        pass


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (59.9, "59s"), (60, "1m00s"), (140, "2m20s"), (3600, "1h00m"), (3900, "1h05m")],
)
def test_durations_read_short(seconds: float, text: str) -> None:
    assert duration(seconds) == text
