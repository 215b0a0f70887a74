"""The one walk over /proc: every process, with what its stat line and owner say.

The case supervisor reads it to find and measure what a case started (reaper.py), and
to count the processes the case's user already has (user.py); the tests and benchmarks watch
what they started through it (testing/procs.py). A process gone
between the listing and the read is left out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

PAGE = os.sysconf("SC_PAGE_SIZE")
DEAD = (b"Z", b"X")  # a zombie only waits to be reaped


@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    state: bytes
    resident: int  # bytes of memory it holds
    uid: int  # who owns its /proc entry: its user, or root for a process not dumpable
    pgid: int  # its process group (the tests' helpers watch a case's group: testing/procs.py)

    @property
    def alive(self) -> bool:
        return self.state not in DEAD


def processes() -> Iterator[Process]:
    """Every process /proc shows now."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as file:
                fields = file.read().rsplit(b")", 1)[1].split()
                uid = os.fstat(file.fileno()).st_uid
        except OSError:
            continue
        # After the name: state, ppid, pgrp, ... rss (field 24 of stat(5), in pages).
        yield Process(
            int(entry), int(fields[1]), fields[0], int(fields[21]) * PAGE, uid, int(fields[2])
        )


def start_time(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot): with the pid, one process for good (a pid
    is reused, never with the same start); None when no such process is there."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            return int(file.read().rsplit(b")", 1)[1].split()[19])  # field 22 of stat(5)
    except (OSError, IndexError, ValueError):
        return None


def comm(pid: int) -> str:
    """The process's name, "" when it is gone."""
    try:
        with open(f"/proc/{pid}/comm") as file:
            return file.read().strip()
    except OSError:
        return ""


def children(pid: int) -> list[int] | None:
    """The children of `pid`'s main thread (all of a single-threaded process's), from one
    read; None where the kernel does not tell (built without CONFIG_PROC_CHILDREN)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as file:
            return [int(child) for child in file.read().split()]
    except OSError:
        return None
