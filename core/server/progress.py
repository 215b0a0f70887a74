"""One test_patch call's MCP progress: its steps, heartbeats when quiet, a last at the total.

The orchestrator's steps are sent as they come; a heartbeat whenever the call has been quiet
for an interval (a case running, a wait for another call); and a last notification whose
progress is the total. Agents' clients give up on a quiet call (Claude Code after 300 s
without a notification), so the server owns a clock; the orchestrator only says what happens.

Values: MCP wants them to increase with every notification. A step that finishes a case sends
the number of cases done; every other notification adds to it the next term of 1/2, 2/3,
3/4, ..., which never reaches the next whole case however long a case runs. The total is
the call's cases plus one for the report, so only the last notification reaches it, whatever
the outcome: an internal failure, a level that runs nothing (total 1), a build that stopped
the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from ssebench.core.orchestrator import STARTED

WAITING = "waiting for another test_patch call"
STARTING = "starting"
FINISHED = "finished"

# notify(progress, total, message); a failure to deliver is the sender's to swallow.
Notify = Callable[[float, float | None, str], Awaitable[None]]


def duration(seconds: float) -> str:
    """`40s`, `2m20s`, `1h05m`: short enough for a client's status line."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


class CallProgress:
    """The progress of one call. `step` is the orchestrator's `Progress` callback."""

    def __init__(
        self, notify: Notify, interval: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._notify = notify
        self._interval = interval
        self._clock = clock
        self._sending = asyncio.Lock()  # values are computed and sent in one order
        self._done = 0  # whole cases done, as the orchestrator last said
        self._extra = -1  # notifications since `_done` last grew, less one
        self._total: int | None = None  # the orchestrator's cases; None until it says
        self._message = STARTING
        self._since = self._last = clock()

    async def step(self, done: float, total: float, message: str) -> None:
        self._total = int(total)
        self._message, self._since = message, self._clock()
        await self._send(int(done), message)

    @contextlib.asynccontextmanager
    async def turn(self, lock: asyncio.Lock) -> AsyncIterator[None]:
        """Hold `lock` for the call; while another call holds it, say so (and keep saying)."""
        if lock.locked():
            self._message, self._since = WAITING, self._clock()
            await self._send(self._done, WAITING)
        async with lock:
            self._message, self._since = STARTING, self._clock()
            yield

    async def finish(self) -> None:
        """The call's last notification: progress equal to the total."""
        total = (self._total or 0) + 1
        async with self._sending:
            self._last = self._clock()
            await self._notify(total, total, FINISHED)

    @contextlib.asynccontextmanager
    async def beating(self) -> AsyncIterator[None]:
        """Send a heartbeat whenever nothing was sent for an interval, until the block ends."""
        beat = asyncio.create_task(self._beat())
        try:
            yield
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(max(0.0, self._last + self._interval - self._clock()))
            if self._clock() - self._last >= self._interval:
                await self._send(self._done, self._heartbeat())

    def _heartbeat(self) -> str:
        """The current state again, with how long it has lasted: `build: running, 2m20s`."""
        age = duration(self._clock() - self._since)
        if self._message == WAITING:
            return f"{WAITING}, {age}"
        if self._message.endswith(f" {STARTED}"):
            return f"{self._message.removesuffix(STARTED)}running, {age}"
        return f"{self._message}, {age} ago"

    async def _send(self, done: int, message: str) -> None:
        async with self._sending:
            if done > self._done:
                self._done, self._extra = done, 0
            else:
                self._extra += 1
            value = self._done + self._extra / (self._extra + 1)
            total = None if self._total is None else self._total + 1
            self._last = self._clock()
            await self._notify(value, total, message)
