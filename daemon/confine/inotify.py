"""inotify through ctypes: the names a folder's entries were created, moved in or written by.

The standard library has no inotify; this is the part of it the report folder (reports.py)
needs, nothing more. A watch is a non-blocking descriptor the supervisor's poll loop waits on.
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


class Watch:
    """An inotify descriptor watching one folder for `mask`."""

    def __init__(self, folder: str, mask: int) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = int(libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
        if fd < 0:
            raise _error("inotify_init1", folder)
        if libc.inotify_add_watch(fd, os.fsencode(folder), mask | IN_ONLYDIR) < 0:
            exc = _error("inotify_add_watch", folder)
            os.close(fd)
            raise exc
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    def events(self, reads: int) -> Iterator[tuple[int, str]]:
        """(mask, name) of what happened, from at most `reads` reads of the queue: bounded, so
        a case that writes without pause cannot keep the supervisor here."""
        for _ in range(reads):
            try:
                data = os.read(self.fd, _BUFFER)
            except BlockingIOError:
                return
            at = 0
            while at + _EVENT.size <= len(data):
                _, mask, _, size = _EVENT.unpack_from(data, at)
                name = data[at + _EVENT.size : at + _EVENT.size + size].rstrip(b"\0")
                at += _EVENT.size + size
                yield mask, os.fsdecode(name)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _error(call: str, folder: str) -> OSError:
    number = ctypes.get_errno() or errno.EIO
    return OSError(number, f"{call}: {os.strerror(number)}", folder)
