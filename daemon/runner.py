"""Runs one case: bash -c in its own process group, output spooled to one file, group always reaped.

stdout and stderr share one open file, so the log keeps the order they were written in and is
never held in memory. Because no pipe is involved, a background child that keeps the output
open cannot hang the check: we wait for the shell alone, then kill whatever is left of its group.

The shell's end is awaited through a pidfd on the event loop, not asyncio's child watcher,
which in Python 3.11 starts a thread for every process. A running group is also registered
with the guard (daemon/guard.py), which kills it if this process dies first.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from ssebench.core.case import CaseRun
from ssebench.daemon.guard import GUARD

GRACE_SECONDS = 1.0
CASE_VARIABLE = "SSE_CASE_ID"  # in every case's environment: how its escaped processes are found
_ESCAPE_ROUNDS = 10  # scans for escaped processes, while each finds some (they may fork)
_POLL_SECONDS = 0.01  # only where pidfd_open is missing (Linux before 5.3)


class RunnerError(Exception):
    """The command could not be started at all; an internal failure, not the check failing."""


def _kill_escaped(case_id: str) -> int:
    """Kill the case's processes that left its group (setsid, daemonizing build servers).

    They are found by the variable every case's environment carries, so only this case's
    are touched, never the host's other processes. Best effort: one that rewrote its
    environment is not found. Returns how many were killed.
    """
    marker = f"{CASE_VARIABLE}={case_id}".encode()
    killed = 0
    for _ in range(_ESCAPE_ROUNDS):
        found = 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as file:
                    environ = file.read()
                if marker in environ.split(b"\0"):
                    os.kill(int(entry), signal.SIGKILL)
                    found += 1
            except OSError:  # gone meanwhile, or another user's
                continue
        if not found:
            break
        killed += found
    return killed


def _killpg(pgid: int, sig: int) -> bool:
    """Signal a whole group; False once no member is left."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def _wait(proc: subprocess.Popen[bytes]) -> int:
    """The shell's exit status once it ended (reaped), without a thread."""
    if proc.returncode is not None:
        return proc.returncode
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        while proc.poll() is None:
            await asyncio.sleep(_POLL_SECONDS)
        return proc.returncode  # type: ignore[return-value]
    loop = asyncio.get_running_loop()
    ended = loop.create_future()

    def readable() -> None:
        if not ended.done():
            ended.set_result(None)

    loop.add_reader(pidfd, readable)
    try:
        await ended
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
    return proc.wait()  # a zombie now: reaped at once


async def _stop_group(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the group; SIGKILL what is left once the shell ended or `grace` seconds passed."""
    if _killpg(proc.pid, signal.SIGTERM):
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(_wait(proc), grace)
        _killpg(proc.pid, signal.SIGKILL)
    # Reap the shell (bounded: a process stuck in the kernel must not hang us).
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(_wait(proc), grace)


def _start(
    command: str, cwd: Path, env: Mapping[str, str], log_path: Path
) -> subprocess.Popen[bytes]:
    """The shell in a process group of its own, its output into `log_path`, known to the guard."""
    try:
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                ["bash", "-c", command],
                cwd=str(cwd),  # an error then names it as a path, not PosixPath(...)
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
    except OSError as exc:
        raise RunnerError(f"cannot start {command!r} in {cwd}: {exc}") from exc
    GUARD.add(proc.pid)
    return proc


def _end_case(proc: subprocess.Popen[bytes], case_id: str) -> None:
    """Kill whatever is left of the case, in its group or escaped from it; the guard lets go."""
    _killpg(proc.pid, signal.SIGKILL)
    _kill_escaped(case_id)
    GUARD.remove(proc.pid)


async def run_command(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    log_path: Path,
    grace: float = GRACE_SECONDS,
) -> CaseRun:
    """Run `command`; on timeout or cancellation the whole process group is stopped, and
    at its end whatever it left running, in its group or escaped from it."""
    started = time.monotonic()
    case_id = uuid.uuid4().hex
    proc = _start(command, cwd, {**env, CASE_VARIABLE: case_id}, log_path)
    timed_out = False
    try:
        try:
            await asyncio.wait_for(_wait(proc), timeout)
        except TimeoutError:
            timed_out = True
            await _stop_group(proc, grace)
            await _wait(proc)
    except BaseException:
        # Cancelled (the caller went away): the group is stopped before we let go. The stop is
        # awaited, shielded, rather than left to a timer that a closing loop (asyncio.run)
        # would drop, sparing a group that ignores SIGTERM; cancelled again, we kill at once.
        with contextlib.suppress(BaseException):
            await asyncio.shield(_stop_group(proc, grace))
        _end_case(proc, case_id)
        raise
    # Leftovers (background children) belong to a finished case: they go.
    _end_case(proc, case_id)
    seconds = time.monotonic() - started
    code = proc.returncode
    assert code is not None
    return CaseRun(
        exit_code=None if code < 0 else code,
        signal=-code if code < 0 else None,
        timed_out=timed_out,
        seconds=round(seconds, 3),
        log_path=log_path,
    )
