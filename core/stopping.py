"""Stopping a child process: ask it to stop, give it a grace, then SIGKILL. Written once.

A process asked to stop may have cleaning up to do (a server cancelling its call, a grade
removing its copy); one that has not ended after its grace is killed, and reaped either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
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


# ssebench as a command, in this interpreter: the one spelling (`ssebench run`'s own children,
# the tests' and the benchmarks'); and ssebench started by ssebench, asked by a typed request
# (its one argument: core/cli/child.py).
SSEBENCH = [sys.executable, "-c", "from ssebench.core.cli import main; main()"]
CHILD = [sys.executable, "-m", "ssebench.core.cli.child"]
SERVER_GRACE = 5.0  # seconds a server has to cancel its running call and end


def stop_server(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM lets the server cancel a running call (its daemon kills the case); then SIGKILL."""
    stop_process(server, SERVER_GRACE)
