"""Long logs that lie on this machine's disk: the daemon runs in our process.

The bytes need not pass through Python: the head is decoded only until the log is known to be
long (more than WORD_LIMIT words or BYTE_LIMIT bytes), a long log is saved by the kernel (hard
link or copy), and only its end is read for the tail.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Sequence
from itertools import islice
from pathlib import Path
from typing import BinaryIO

from ssebench.core.logend import decode_end
from ssebench.core.logs import (
    BREAKS,
    BYTE_LIMIT,
    LINE_LIMIT,
    WORD,
    WORD_LIMIT,
    LogAccumulator,
    LogView,
    nth_newline_from_end,
    tail,
    wire_size,
)
from ssebench.core.savedlogs import Owner, hand_over, new_log_path

_HEAD_CHUNK = 1 << 20  # bytes decoded at a time while counting words
_TAIL_SPAN = 64 * 1024  # the first guess at how many end bytes hold the tail
_COPY_STEP = 64 << 20  # bytes the kernel copies between checks of `stop`


class _Stopped(Exception):
    """view_log_files was told to stop."""


class _Joined:
    """Several open log files read as one, by offset."""

    def __init__(self, files: Sequence[BinaryIO]) -> None:
        self.files = list(files)
        self.sizes = [os.fstat(f.fileno()).st_size for f in self.files]
        self.size = sum(self.sizes)

    def read(self, offset: int, count: int) -> bytes:
        parts = []
        for file, size in zip(self.files, self.sizes, strict=True):
            if offset >= size:
                offset -= size
                continue
            while count and offset < size:
                part = os.pread(file.fileno(), min(count, size - offset), offset)
                if not part:
                    raise OSError(errno.EIO, f"{file.name}: shorter than it was")
                parts.append(part)
                offset += len(part)
                count -= len(part)
            offset = 0
            if not count:
                break
        return b"".join(parts)


def _tail_of(log: _Joined) -> str:
    """The spec's tail, read from the end of the log in growing spans.

    A span decoded from a cut inside the log starts after a character's continuation bytes, where
    the whole log's decoding is at a character boundary too, so the texts agree from there on.
    The span settles the tail once it holds the 100th line break from the end (the line start
    is then exact, and words are only counted after it), more than WORD_LIMIT words (the word
    start is exact and lies after any line start outside the span), as in _tail_start, or more
    than BYTE_LIMIT bytes (the tail is then cut inside the span, after the span's first
    character, whatever the span's own line and word starts say).
    """
    span = _TAIL_SPAN
    while True:
        start = max(0, log.size - span)
        body = decode_end(log.read(start, log.size - start), cut=start > 0).rstrip(BREAKS)
        words = sum(1 for _ in islice(WORD.finditer(body), WORD_LIMIT + 1))
        settled = nth_newline_from_end(body, LINE_LIMIT) >= 0 or words > WORD_LIMIT
        if not start or settled or wire_size(body) > BYTE_LIMIT:
            return tail(body)
        span *= 4


def _copy_range(source: int, target: int, size: int, stop: threading.Event | None) -> None:
    """Append `size` bytes of `source` to `target`, copied by the kernel."""
    offset = 0
    copy = getattr(os, "copy_file_range", None)
    while offset < size:
        if stop is not None and stop.is_set():
            raise _Stopped
        step = min(_COPY_STEP, size - offset)
        try:
            if copy is not None:
                done = copy(source, target, step, offset)
            else:
                done = os.sendfile(target, source, offset, step)
        except OSError as exc:
            if copy is None or exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL):
                raise
            copy = None  # this kernel or file system cannot: sendfile can
            continue
        if not done:
            raise OSError(errno.EIO, "the log ended before its size")
        offset += done


def _link(file: BinaryIO, path: Path) -> bool:
    """Hard-link the open file itself (not whatever its name points to now) as `path`."""
    try:
        root = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        # A dir fd makes os.link call linkat, which can follow the /proc link; link() cannot.
        os.link(f"/proc/self/fd/{file.fileno()}", path, src_dir_fd=root, follow_symlinks=True)
    except OSError:  # another file system, no /proc, a file unlinked meanwhile: copy instead
        return False
    finally:
        os.close(root)
    return True


def _save_copy(
    log: _Joined, log_dir: Path, stop: threading.Event | None, owner: Owner | None
) -> Path | None:
    """The full log, byte for byte, in log_dir; None when it cannot be written.

    One file is hard-linked when it can be (same file system): the daemon never writes to a
    finished case's log again, it writes each run to a new file, so sharing it is safe and
    costs nothing. Otherwise the kernel copies the bytes.
    """
    try:
        path = new_log_path(log_dir)
        if len(log.files) == 1:
            hand_over(log.files[0].fileno(), owner)  # the same file, if the link is made
            if _link(log.files[0], path):
                return path
        out = path.open("xb")
    except OSError:
        return None
    try:
        with out:
            for file, size in zip(log.files, log.sizes, strict=True):
                _copy_range(file.fileno(), out.fileno(), size, stop)
            hand_over(out.fileno(), owner)
    except OSError:
        path.unlink(missing_ok=True)
        return None
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def view_log_files(
    files: Sequence[BinaryIO],
    log_dir: Path,
    stop: threading.Event | None = None,
    owner: Owner | None = None,
) -> LogView:
    """view_log for logs on this machine's disk, concatenated: the daemon runs in our process.

    The bytes need not pass through Python: the head is decoded only until the log is known to
    be long, a long log is copied by the kernel, and only its end is read for the tail. It
    blocks, so run it in a thread; setting `stop` ends it early (raising) with no file
    left. It closes the files it is given, whatever happens.
    """
    try:
        log = _Joined(files)
        acc = LogAccumulator(log_dir, save=False)
        offset = 0
        while offset < log.size and not acc.truncated:
            if stop is not None and stop.is_set():
                raise _Stopped
            chunk = log.read(offset, _HEAD_CHUNK)
            acc.feed(chunk)
            offset += len(chunk)
        if not acc.truncated:
            view = acc.finish()
            if not view.truncated:
                return view
            # The decoder's last flush (a cut character at the very end) made it long.
        text = _tail_of(log)
        saved = _save_copy(log, log_dir, stop, owner)
        if saved is not None and stop is not None and stop.is_set():
            saved.unlink(missing_ok=True)  # nobody is left to read it
            raise _Stopped
        return LogView(text, truncated=True, saved_path=saved)
    finally:
        for file in files:
            file.close()
