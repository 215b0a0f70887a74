"""The disk a case holds, and the machine's free space while it runs.

A case's user may hold at most `limits.disk_mb` (its runner copy, what builds add to it, its
TMPDIR, HOME and files in /tmp): over it the case fails, its own fault. But a disk filled by
someone else (a grade beside it, the machine) must never become a verdict: when the volume
under the case's folders has less free space than a floor, the case ends as a fault of the
machine, an error that a rerun grades again.

Measuring what a tree holds means walking it, so it is done only when the volume's free space
has fallen by more than the room the case had left at the last measurement: a case writing
little costs one statvfs per look. Others' files freed on the same volume meanwhile would hide
what the case wrote from that test, so a case is also measured every so often whatever the
volume says: every PERIOD seconds at least, and never more than a twentieth of the time.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Iterable

from ssebench.daemon.confine.leftovers import owned
from ssebench.daemon.confine.walk import DIR_FLAGS, entries

FLOOR = 128 << 20  # bytes of free space under which the machine, not the patch, is at fault
PERIOD = 2.0  # seconds between two measurements at least, whatever the free space says
SHARE = 20  # a measurement waits this many times what the last one took


def free_bytes(path: str) -> int:
    info = os.statvfs(path)
    return info.f_bavail * info.f_frsize


def held(roots: Iterable[str], uid: int | None = None) -> int:
    """Bytes of disk the files under `roots` (or the files `roots` are) hold, each inode once
    and only `uid`'s when given, never following a link, however deep (walk.py: a case's
    3,000-deep folder ended the supervisor in os.walk's recursion, and what lay deeper than
    a path can name went uncounted)."""
    seen: set[tuple[int, int]] = set()
    total = 0

    def count(info: os.stat_result) -> None:
        nonlocal total
        key = (info.st_dev, info.st_ino)
        if key in seen or (uid is not None and info.st_uid != uid):
            return
        seen.add(key)
        if not stat.S_ISDIR(info.st_mode) or uid is not None:
            total += info.st_blocks * 512

    for root in roots:
        with contextlib.suppress(OSError):
            info = os.lstat(root)
            count(info)  # a file or folder of the case's user in a shared one (an own one: 0)
            if stat.S_ISDIR(info.st_mode):
                top = os.open(root, DIR_FLAGS)
                try:
                    for _, _, inner, _ in entries(top):
                        count(inner)
                finally:
                    os.close(top)
    return total


class DiskWatch:
    """One case's disk: `own` the folders it holds whole (its copy, its folder), `shared` the
    folders where only its user's files count (/tmp under Landlock)."""

    def __init__(
        self,
        own: tuple[str, ...],
        shared: tuple[str, ...],
        uid: int,
        limit: int,
        floor: int = FLOOR,
        skip: tuple[str, ...] = (),
    ) -> None:
        self.own, self.shared, self.uid, self.limit, self.floor = own, shared, uid, limit, floor
        self.skip = skip
        self.volumes = {os.stat(p).st_dev: p for p in (*own, *shared) if os.path.exists(p)}
        self.baseline = self._free()
        self.room = limit  # what the case may still write before it must be measured
        self.due = time.monotonic() + PERIOD  # when it is measured whatever the volume says

    def _free(self) -> dict[int, int]:
        found = {}
        for dev, path in self.volumes.items():
            with contextlib.suppress(OSError):
                found[dev] = free_bytes(path)
        return found

    def usage(self) -> int:
        """What it holds: its own folders whole, and in the shared ones what its user owns,
        found where that user can write (leftovers.owned: a shared /tmp may hold many files
        of others', in folders the case could never reach, which are not walked)."""
        return held(self.own) + held(owned(self.shared, self.uid, self.skip), self.uid)

    def look(self) -> tuple[str, str]:
        """("over", why) when the case holds more than its limit, ("fault", why) when the
        machine is short of space, else ("", "")."""
        free = self._free()
        fallen = max((self.baseline.get(d, f) - f for d, f in free.items()), default=0)
        short = {d: f for d, f in free.items() if f < self.floor}
        started = time.monotonic()
        if fallen <= self.room and not short and started < self.due:
            return "", ""
        used = self.usage()
        self.due = time.monotonic() + max(PERIOD, SHARE * (time.monotonic() - started))
        if used > self.limit:
            return "over", f"{self.limit >> 20} MB of disk"
        if short:
            dev, left = next(iter(short.items()))
            return "fault", (
                f"the volume of {self.volumes[dev]} has {left >> 20} MiB free, under ssebench's "
                f"floor of {self.floor >> 20} MiB: free some space and grade again"
            )
        self.baseline, self.room = free, self.limit - used
        return "", ""
