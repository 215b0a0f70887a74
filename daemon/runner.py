"""Runs one case: bash -c in its own process group, output spooled to one file, group always reaped.

stdout and stderr share one open file, so the log keeps the order they were written in and is
never held in memory. Because no pipe is involved, a background child that keeps the output
open cannot hang the check: we wait for the shell alone, then kill whatever is left of its group.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

GRACE_SECONDS = 1.0


class RunnerError(Exception):
    """The command could not be started at all; an internal failure, not the check failing."""


@dataclass(frozen=True)
class Finished:
    exit_code: int | None  # None when a signal ended it
    signal: int | None
    timed_out: bool
    seconds: float


def _killpg(pgid: int, sig: int) -> bool:
    """Signal a whole group; False once no member is left."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def _stop_group(proc: asyncio.subprocess.Process, grace: float) -> None:
    """SIGTERM the group; SIGKILL what is left once the shell ended or `grace` seconds passed."""
    if _killpg(proc.pid, signal.SIGTERM):
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), grace)
        _killpg(proc.pid, signal.SIGKILL)
    # Reap the shell (bounded: a process stuck in the kernel must not hang us).
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), grace)


async def run_command(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    log_path: Path,
    grace: float = GRACE_SECONDS,
) -> Finished:
    """Run `command`; on timeout or cancellation the whole process group is stopped."""
    started = time.monotonic()
    try:
        with log_path.open("wb") as log:
            proc = await asyncio.create_subprocess_exec(
                "bash",
                "-c",
                command,
                cwd=str(cwd),  # an error then names it as a path, not PosixPath(...)
                env=dict(env),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
    except OSError as exc:
        raise RunnerError(f"cannot start {command!r} in {cwd}: {exc}") from exc
    timed_out = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            timed_out = True
            await _stop_group(proc, grace)
            await proc.wait()
    except BaseException:
        # Cancelled (the caller went away): the group is stopped before we let go. The stop is
        # awaited, shielded, rather than left to a timer that a closing loop (asyncio.run)
        # would drop, sparing a group that ignores SIGTERM; cancelled again, we kill at once.
        with contextlib.suppress(BaseException):
            await asyncio.shield(_stop_group(proc, grace))
        _killpg(proc.pid, signal.SIGKILL)
        raise
    # Leftovers (background children) belong to a finished case: they go.
    _killpg(proc.pid, signal.SIGKILL)
    seconds = time.monotonic() - started
    code = proc.returncode
    assert code is not None
    if code < 0:
        return Finished(exit_code=None, signal=-code, timed_out=timed_out, seconds=seconds)
    return Finished(exit_code=code, signal=None, timed_out=timed_out, seconds=seconds)
