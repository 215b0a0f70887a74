"""What /proc shows of the processes a test or benchmark started: groups, a task's, figures.

A task's processes are found by their environment (SSE_TASK_DIR names the task), so even one
that left its process group is seen. A zombie waiting for its reaper does not count as alive.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

_DEAD = ("Z", "X")


def _state_and_group(pid: str) -> tuple[str, int] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0], int(fields[2])


def _pids() -> list[str]:
    return [entry for entry in os.listdir("/proc") if entry.isdigit()]


def live_members(pgid: int) -> list[int]:
    """Processes of the group that still run."""
    members = []
    for pid in _pids():
        found = _state_and_group(pid)
        if found is not None and found[1] == pgid and found[0] not in _DEAD:
            members.append(int(pid))
    return members


def wait_group_gone(pgid: int, since: float, limit: float = 2.0) -> float:
    """Seconds from `since` (a monotonic instant) until no live process of the group is left."""
    while live_members(pgid):
        if time.monotonic() - since > limit:
            raise AssertionError(
                f"process group {pgid} still runs {live_members(pgid)} after {limit} s"
            )
        time.sleep(0.01)
    return time.monotonic() - since


def task_processes(task: Path) -> list[int]:
    """Live processes started for this task: their environment names it."""
    marker = f"SSE_TASK_DIR={task}".encode()
    found = []
    for pid in _pids():
        stat = _state_and_group(pid)
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if stat is not None and stat[0] not in _DEAD and marker in environ.split(b"\0"):
            found.append(int(pid))
    return found


def kill_all(task: Path) -> None:
    for pid in task_processes(task):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def assert_none_left(task: Path, limit: float = 3.0) -> None:
    """No process of the task is alive within `limit` seconds (a killed one's reaper may be
    slow); if some are, they are killed and the assertion fails."""
    deadline = time.monotonic() + limit
    while left := task_processes(task):
        if time.monotonic() > deadline:
            kill_all(task)
            raise AssertionError(f"processes of the task still alive after {limit} s: {left}")
        time.sleep(0.02)


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (kB) of a live process."""
    figures = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            figures[name] = int(value.split()[0])
    return figures


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))
