"""Stopping a child process: ask it to stop, give it a grace, then SIGKILL. Written once.

A process asked to stop may have cleaning up to do (a server cancelling its call, a grade
removing its copy); one that has not ended after its grace is killed, and reaped either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
from collections.abc import Callable
from typing import Any


def stop_process(
    proc: subprocess.Popen[Any],
    grace: float,
    *,
    signum: int | None = signal.SIGTERM,
    before_kill: Callable[[], object] = lambda: None,
) -> int:
    """Send `signum` (None: it was asked some other way), wait up to `grace` seconds, then
    `before_kill` (what must go before it, say) and SIGKILL; its exit status."""
    if signum is not None and proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)
    try:
        return proc.wait(grace)
    except subprocess.TimeoutExpired:
        before_kill()
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        return proc.wait()


async def stop_subprocess(
    proc: asyncio.subprocess.Process, grace: float, *, signum: int = signal.SIGTERM
) -> int:
    """stop_process for an asyncio child: `signum`, `grace` seconds, then SIGKILL."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)
    try:
        return await asyncio.wait_for(proc.wait(), grace)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        return await proc.wait()
