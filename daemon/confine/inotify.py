"""inotify through ctypes: the names a folder's entries were created, moved in or written by.

The standard library has no inotify; this is the part of it the report folders (reports.py)
need, nothing more. One instance serves a supervisor's whole life, a watch added for each case
and removed after it: closing an instance that held a watch waits for the kernel's grace period
(~8 ms here, bench/sanitizerlog.py), adding and removing a watch does not (~2 us). Its
descriptor is non-blocking, for the supervisor's poll loop.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from collections.abc import Iterator

IN_MODIFY = 0x2
IN_CLOSE_WRITE = 0x8
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_Q_OVERFLOW = 0x4000
IN_ONLYDIR = 0x01000000
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name, NUL-padded
_BUFFER = 1 << 16


class Inotify:
    """An inotify instance, its watches added and removed by their descriptors."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = int(self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
        if self.fd < 0:
            raise _error("inotify_init1", "")

    def fileno(self) -> int:
        return self.fd

    def add(self, folder: str, mask: int) -> int:
        """A watch of `folder` (which must be one) for `mask`: its descriptor."""
        wd = int(self._libc.inotify_add_watch(self.fd, os.fsencode(folder), mask | IN_ONLYDIR))
        if wd < 0:
            raise _error("inotify_add_watch", folder)
        return wd

    def remove(self, wd: int) -> None:
        self._libc.inotify_rm_watch(self.fd, wd)  # gone with its folder already: nothing to do

    def events(self, reads: int) -> Iterator[tuple[int, int, str]]:
        """(watch, mask, name) of what happened, from at most `reads` reads of the queue:
        bounded, so a case that writes without pause cannot keep the supervisor here."""
        for _ in range(reads):
            try:
                data = os.read(self.fd, _BUFFER)
            except BlockingIOError:
                return
            at = 0
            while at + _EVENT.size <= len(data):
                wd, mask, _, size = _EVENT.unpack_from(data, at)
                name = data[at + _EVENT.size : at + _EVENT.size + size].rstrip(b"\0")
                at += _EVENT.size + size
                yield wd, mask, os.fsdecode(name)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _error(call: str, folder: str) -> OSError:
    number = ctypes.get_errno() or errno.EIO
    return OSError(number, f"{call}: {os.strerror(number)}", folder)
