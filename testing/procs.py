"""What /proc shows of the processes a test or benchmark started: groups, a task's, figures.

The walk over /proc is the case supervisor's own (daemon/confine/procfs.py); here is what the
tests ask of it. A task's processes are found by their environment (SSE_TASK_DIR names the
task), so even one that left its process group is seen. A zombie waiting for its reaper does
not count as alive.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path

from ssebench.daemon.confine.procfs import Process, processes
from ssebench.testing.waiting import wait_for


def process(pid: int) -> Process | None:
    """The process `pid`, None when there is none."""
    return next((found for found in processes() if found.pid == pid), None)


def alive(pid: int) -> bool:
    found = process(pid)
    return found is not None and found.alive


def live_members(pgid: int) -> list[int]:
    """Processes of the group that still run."""
    return [found.pid for found in processes() if found.pgid == pgid and found.alive]


def wait_group_gone(pgid: int, since: float, limit: float = 2.0) -> float:
    """Seconds from `since` (a monotonic instant) until no live process of the group is left,
    which must be within `limit` seconds of `since`."""
    wait_for(
        lambda: not live_members(pgid),
        since + limit - time.monotonic(),
        lambda: f"process group {pgid} gone within {limit:g} s (live: {live_members(pgid)})",
    )
    return time.monotonic() - since


def commands(pattern: re.Pattern[str]) -> dict[int, str]:
    """Live processes whose command line (its words joined by spaces) `pattern` finds."""
    found = {}
    for each in processes():
        try:
            words = Path(f"/proc/{each.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, UnicodeDecodeError):
            continue
        if each.alive and pattern.search(words):
            found[each.pid] = words
    return found


def task_processes(task: Path) -> list[int]:
    """Live processes started for this task: their environment names it."""
    marker = f"SSE_TASK_DIR={task}".encode()
    found = []
    for each in processes():
        try:
            environ = Path(f"/proc/{each.pid}/environ").read_bytes()
        except OSError:
            continue
        if each.alive and marker in environ.split(b"\0"):
            found.append(each.pid)
    return found


def kill_all(task: Path) -> None:
    for pid in task_processes(task):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def assert_none_left(task: Path, limit: float = 3.0) -> None:
    """No process of the task is alive within `limit` seconds (a killed one's reaper may be
    slow); if some are, they are killed and the assertion fails."""
    try:
        wait_for(
            lambda: not task_processes(task),
            limit,
            lambda: f"no process of the task alive (alive: {task_processes(task)})",
            0.02,
        )
    finally:
        kill_all(task)


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
