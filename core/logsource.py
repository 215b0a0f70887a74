"""A case's log as its daemon hands it over: a log source, which the tail rule reads.

Wherever the log lies (a spooled file of the daemon in this process, another process's over
HTTP, the upstream API's answer kept in memory), the orchestrator sees its size, its bytes at an
offset, the whole of it forward, and the open file itself when it lies on this machine's disk,
for the kernel to copy. One rule (core/logs.py) reads them all. Reads block: the rule runs in a
worker thread, off the event loop, and a daemon's source is read from that thread only.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

CHUNK = 1 << 20  # bytes read at a time from a file or memory


class LogSource(Protocol):
    """One case's log, `size` bytes. Whoever opened it closes it."""

    @property
    def size(self) -> int: ...

    def read(self, offset: int, count: int) -> bytes:
        """The `count` bytes from `offset` (fewer only past the end). A log shorter than its
        size is an error: OSError from this machine's disk (the log then counts as not saved),
        DaemonError from a daemon elsewhere (an internal failure)."""
        ...

    def chunks(self) -> Iterator[bytes]:
        """The whole log, forward: what a save writes when there is no file to copy."""
        ...

    def fileno(self) -> int | None:
        """The log's open file when it lies on this machine's disk (the kernel copies it, or a
        link shares it); None when its bytes come from elsewhere."""
        ...

    def close(self) -> None: ...


class FileLog:
    """A log in a file on this machine's disk (the case service's spool)."""

    def __init__(self, path: Path, size: int) -> None:
        """The log at `path`, which must still be `size` bytes (OSError otherwise)."""
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        found = os.fstat(self._fd).st_size
        if found != size:
            os.close(self._fd)
            raise OSError(errno.EIO, f"{path}: {found} bytes, not {size}")
        self.size = size

    def read(self, offset: int, count: int) -> bytes:
        count = max(0, min(count, self.size - offset))
        parts = []
        while count:
            part = os.pread(self._fd, count, offset)
            if not part:
                raise OSError(errno.EIO, "the log is shorter than it was")
            parts.append(part)
            offset += len(part)
            count -= len(part)
        return b"".join(parts)

    def chunks(self) -> Iterator[bytes]:
        for offset in range(0, self.size, CHUNK):
            yield self.read(offset, CHUNK)

    def fileno(self) -> int | None:
        return self._fd

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class BytesLog:
    """A log held in memory (the upstream API answers with the whole output)."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self.size = len(data)

    def read(self, offset: int, count: int) -> bytes:
        return self._data[offset : offset + count]

    def chunks(self) -> Iterator[bytes]:
        view = memoryview(self._data)
        for offset in range(0, self.size, CHUNK):
            yield bytes(view[offset : offset + CHUNK])

    def fileno(self) -> int | None:
        return None

    def close(self) -> None:
        pass


class Joined:
    """Several logs read as one, by offset: a check's log is its failed cases' logs in order."""

    def __init__(self, parts: Sequence[LogSource]) -> None:
        self.parts = list(parts)
        self.size = sum(part.size for part in self.parts)

    def read(self, offset: int, count: int) -> bytes:
        pieces = []
        for part in self.parts:
            if count <= 0:
                break
            if offset >= part.size:
                offset -= part.size
                continue
            piece = part.read(offset, min(count, part.size - offset))
            if len(piece) != min(count, part.size - offset):
                raise OSError(errno.EIO, "a log is shorter than its size")
            pieces.append(piece)
            count -= len(piece)
            offset = 0
        return b"".join(pieces)

    def close(self) -> None:
        for part in self.parts:
            part.close()

    def __enter__(self) -> Joined:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_whole(source: LogSource) -> bytes:
    """All of a log in memory (tests and small logs only: a log can be gigabytes)."""
    return source.read(0, source.size)
