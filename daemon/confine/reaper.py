"""The supervisor's view of its process tree: every descendant, found in /proc, and ended.

The supervisor is a child subreaper, so whatever a case started stays below it: these find
all of it, however it detached itself, and kill it until nothing is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable

from ssebench.daemon.confine.procfs import comm, processes


def _scan() -> tuple[list[int], dict[int, int]]:
    """Every live process below this one (zombies excluded: they only wait to be reaped), and
    each one's resident memory in bytes, from one pass over /proc."""
    children: dict[int, list[int]] = {}
    resident: dict[int, int] = {}
    for process in processes():
        children.setdefault(process.ppid, []).append(process.pid)
        if process.alive:
            resident[process.pid] = process.resident
    found, todo = [], [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return [pid for pid in found if pid in resident], resident


def descendants() -> list[int]:
    """Every live process below this one."""
    return _scan()[0]


def usage() -> tuple[int, int]:
    """How many live processes are below this one, and the bytes of memory they hold."""
    found, resident = _scan()
    return len(found), sum(resident[pid] for pid in found)


def signal_all(signum: int, *, spare: str = "") -> int:
    """Send `signum` to every descendant, but those named `spare` (by their comm)."""
    sent = 0
    for pid in descendants():
        if spare and comm(pid) == spare:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
            sent += 1
    return sent


def has_children() -> bool:
    """Whether any child is left (living, or dead and not reaped): one syscall, where a scan of
    /proc costs milliseconds. A subreaper with no child has no descendant at all."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def kill_all(reap: Callable[[], None]) -> int:
    """SIGKILL every descendant until none is left (a fork between scans is caught next time)."""
    killed = 0
    for _ in range(1000):
        reap()
        if not has_children():
            return killed
        sent = signal_all(signal.SIGKILL)
        reap()
        if not sent:
            return killed
        killed += sent
        time.sleep(0.001)
    return killed
