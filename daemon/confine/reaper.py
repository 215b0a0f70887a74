"""The supervisor's view of its process tree: every descendant, found in /proc, and ended.

The supervisor is a child subreaper, so whatever a case started stays below it: these find
all of it, however it detached itself, and kill it until nothing is left. The standbys waiting
for the next cases (pool.py) are below it too: each is known by its first process, the one the
supervisor started, and `spare` names those, whose whole trees are left out. A process of the
case that detached is reparented to the supervisor itself, so it is a child that no standby
started: it is the case's, counted and killed with it.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Callable, Collection

from ssebench.daemon.confine.procfs import children, comm, processes

NONE: frozenset[int] = frozenset()
# kill_all tries for at least this many scans and this long before it gives up on a case that
# forks faster than it kills; between scans it waits a tick, or less when a child ends first.
KILL_SCANS = 1000
KILL_SECONDS = 1.0
KILL_TICK = 0.001


def _scan(spare: Collection[int] = NONE) -> tuple[list[int], dict[int, int]]:
    """Every live process below this one but the trees of `spare` (zombies excluded: they only
    wait to be reaped), and each one's resident memory in bytes, from one pass over /proc."""
    children: dict[int, list[int]] = {}
    resident: dict[int, int] = {}
    for process in processes():
        children.setdefault(process.ppid, []).append(process.pid)
        if process.alive:
            resident[process.pid] = process.resident
    me = os.getpid()
    found, todo = [], [me]
    while todo:
        parent = todo.pop()
        for child in children.get(parent, []):
            if parent == me and child in spare:
                continue  # a standby's tree: none of it is the case's
            found.append(child)
            todo.append(child)
    return [pid for pid in found if pid in resident], resident


def descendants(spare: Collection[int] = NONE) -> list[int]:
    """Every live process below this one but the trees of `spare`."""
    return _scan(spare)[0]


def usage(spare: Collection[int] = NONE) -> tuple[int, int]:
    """How many live processes are below this one but the trees of `spare`, and the bytes of
    memory they hold."""
    found, resident = _scan(spare)
    return len(found), sum(resident[pid] for pid in found)


def signal_all(signum: int, *, spare: Collection[int] = NONE, last: str = "") -> int:
    """Send `signum` to every descendant but the trees of `spare`, and but those named `last`
    (by their comm)."""
    sent = 0
    for pid in descendants(spare):
        if last and comm(pid) == last:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
            sent += 1
    return sent


def has_children(spare: Collection[int] = NONE) -> bool:
    """Whether any child but those in `spare` is left (living, or dead and not reaped): a
    syscall or a read, where a scan of /proc costs milliseconds. A subreaper with no other
    child has no descendant outside their trees: a case's every process is below its first
    or, detached, was given to us."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    if not spare:
        return True
    found = children(os.getpid())
    return found is None or any(child not in spare for child in found)


def kill_all(reap: Callable[[], None], spare: Collection[int] = NONE) -> int:
    """SIGKILL every descendant but the trees of `spare` until none is left (a fork between
    scans is caught next time). `spare` is read at every scan: a standby reaped meanwhile must
    be out of it, or a process given its pid would be spared."""
    killed, scans, deadline = 0, 0, time.monotonic() + KILL_SECONDS
    while True:
        reap()
        if not has_children(spare):
            return killed
        scans += 1
        if scans == 1:
            # A tick first for a child that is ending anyway (bubblewrap's init, whose
            # namespaces go after bubblewrap has exited): it goes without a scan of the
            # machine's /proc, which costs milliseconds (bench/RESULTS.md, issue 34).
            child_ended(spare, KILL_TICK)
            continue
        sent = signal_all(signal.SIGKILL, spare=spare)
        reap()
        if not sent:
            return killed
        killed += sent
        if scans >= KILL_SCANS and time.monotonic() >= deadline:
            return killed
        child_ended(spare, KILL_TICK)


def child_ended(spare: Collection[int], timeout: float) -> None:
    """Until a child but those in `spare` has ended, at most `timeout` seconds: its pidfd wakes
    us the moment it is done, where a sleep waited its whole tick, and more on a busy machine."""
    pidfds = []
    for pid in children(os.getpid()) or []:  # ours alone reap them: no pid is reused meanwhile
        if pid not in spare:
            with contextlib.suppress(OSError):
                pidfds.append(os.pidfd_open(pid))
    if not pidfds:
        time.sleep(timeout)  # only grandchildren left, or no /proc/<pid>/children here
        return
    try:
        poller = select.poll()
        for fd in pidfds:
            poller.register(fd, select.POLLIN)
        poller.poll(timeout * 1000)
    finally:
        for fd in pidfds:
            os.close(fd)
