"""Long logs: the spec's tail rule, with the full log saved where the agent can read it.

A failing check's log ends the report the agent reads. A log of at most WORD_LIMIT words is
shown whole; a longer one is shown as its tail (the last LINE_LIMIT lines or the last
WORD_LIMIT words, whichever is shorter) and saved byte for byte so the agent can read the rest.
Logs arrive as chunks and may be far larger than memory, so decoded text is kept only as a
rolling window that still holds the final tail.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import re
import threading
import uuid
from collections import deque
from collections.abc import AsyncIterable, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import BinaryIO

WORD_LIMIT = 10_000
LINE_LIMIT = 100

_BREAKS = "\r\n"  # only these are dropped from the end of a log
_WORD = re.compile(r"\S+")  # re's \s is exactly str.isspace(), so these are str.split()'s words
_CHUNK = 64 * 1024  # slice size for view_log_bytes, like the daemon's stream chunks
_MIN_WINDOW = 1 << 20  # decoded chars held before the first trim of a long log
_HEAD_CHUNK = 1 << 20  # view_log_files: bytes decoded at a time while counting words
_TAIL_SPAN = 64 * 1024  # view_log_files: the first guess at how many end bytes hold the tail
_COPY_STEP = 64 << 20  # view_log_files: bytes the kernel copies between checks of `stop`


@dataclass(frozen=True)
class LogView:
    """What the report shows of one log."""

    text: str  # whole log, or its tail; trailing line breaks dropped
    truncated: bool  # True when the log had more than WORD_LIMIT words
    saved_path: Path | None  # the saved full log (only when truncated and saved)
    save_failed: bool = False  # truncated but the file could not be written


def _nth_newline_from_end(text: str, n: int) -> int:
    """Index of the n-th "\\n" counted from the end of `text`, or -1 when it has fewer."""
    pos = len(text)
    for _ in range(n):
        pos = text.rfind("\n", 0, pos)
        if pos < 0:
            return -1
    return pos


def _tail_start(text: str) -> int:
    """Where the tail begins: the later of the last-lines start and the last-words start.

    Words are scanned only after the line start (if WORD_LIMIT of them lie there the word
    start is the later one, otherwise the line start is), and from the end in growing spans,
    so the work is bounded by the tail rather than by the text.
    """
    line_start = _nth_newline_from_end(text, LINE_LIMIT) + 1
    span = 16 * WORD_LIMIT
    while True:
        lo = max(line_start, len(text) - span)
        starts = deque((m.start() for m in _WORD.finditer(text, lo)), maxlen=WORD_LIMIT + 1)
        if len(starts) > WORD_LIMIT:
            return starts[1]  # only the first match after lo can be a cut word
        if lo == line_start:
            return starts[0] if len(starts) == WORD_LIMIT else line_start
        span *= 4


def tail(text: str) -> str:
    """The spec's tail of an already decoded, already stripped log.

    Pure suffix rule; it does not check WORD_LIMIT (view_log decides whether to truncate).
    """
    return text[_tail_start(text) :]


class _LogAccumulator:
    """The streaming state shared by view_log and view_log_bytes.

    It writes the raw bytes to the save file as they come (only the end tells whether the file
    is needed), counts words across chunk boundaries, and keeps a window of decoded text. The
    window is the whole text while the count is at most WORD_LIMIT; after that it is a suffix
    starting at or before the final tail's start, at a line or word start (plus the kept end
    of a trailing run of line breaks, see _trim). File writes are synchronous: a 64 KiB write
    lands in the page cache, and a thread hop per chunk would cost more than it saves.
    """

    def __init__(self, log_dir: Path, min_window: int = _MIN_WINDOW, *, save: bool = True) -> None:
        self._log_dir = log_dir
        self._path: Path | None = None
        self._file: BinaryIO | None = None
        self._save_failed = not save
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pieces: list[str] = []
        self._size = 0
        self._words = 0  # exact up to WORD_LIMIT + 1; past that only "too many" matters
        self._in_word = False  # the text so far ends inside a word
        self._min_window = min_window
        self._trim_at = min_window

    @property
    def window_size(self) -> int:
        """Decoded chars held now (what bounds the memory)."""
        return self._size

    @property
    def truncated(self) -> bool:
        """More than WORD_LIMIT words so far: only the tail will be shown."""
        return self._words > WORD_LIMIT

    def feed(self, chunk: bytes) -> None:
        """Take the next chunk of the log."""
        if chunk:
            self._write(chunk)
            self._take(self._decoder.decode(chunk))

    def finish(self) -> LogView:
        """End of log: flush the decoder, apply the rule, keep the file only if truncated."""
        self._take(self._decoder.decode(b"", final=True))
        text = "".join(self._pieces).rstrip(_BREAKS)
        if self._words <= WORD_LIMIT:
            self._discard_file()
            return LogView(text=text, truncated=False, saved_path=None)
        saved = self._keep_file()
        return LogView(tail(text), truncated=True, saved_path=saved, save_failed=saved is None)

    def abort(self) -> None:
        """The stream failed: leave no partial file behind."""
        self._discard_file()

    def _write(self, chunk: bytes) -> None:
        if self._save_failed:
            return
        try:
            if self._file is None:
                self._log_dir.mkdir(parents=True, exist_ok=True)
                path = self._log_dir / f"{uuid.uuid4()}.txt"
                self._file = path.open("xb")
                self._path = path
            self._file.write(chunk)
        except OSError:  # a failed save must not hide the log: the tail is still shown
            self._save_failed = True
            self._discard_file()

    def _keep_file(self) -> Path | None:
        if self._file is None:
            return None
        try:
            self._file.close()  # flushes, so a full disk can still show up here
        except OSError:
            self._discard_file()
            return None
        self._file = None
        return self._path

    def _discard_file(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        if self._path is not None:
            with contextlib.suppress(OSError):
                self._path.unlink(missing_ok=True)
            self._path = None

    def _take(self, text: str) -> None:
        if not text:
            return
        if self._words <= WORD_LIMIT:
            n = len(text.split())
            if self._in_word and not text[0].isspace():
                n -= 1  # this word began in the previous chunk and was counted there
            self._words += n
            self._in_word = not text[-1].isspace()
        self._pieces.append(text)
        self._size += len(text)
        if self._words > WORD_LIMIT and self._size > self._trim_at:
            self._trim()

    def _trim(self) -> None:
        """Cut the window's front at the tail start of the text so far.

        Later text only moves the line start and the word start forward, so nothing before
        it can be in the final tail. A trailing run of line breaks is either dropped at the
        end (nothing follows) or pushes the line start past all but its last LINE_LIMIT
        newlines, so only those are kept. The next trim waits until the window doubles,
        keeping the work linear in the log's size.
        """
        window = "".join(self._pieces)
        body = window.rstrip(_BREAKS)
        run = window[len(body) :]
        kept = body[_tail_start(body) :] + run[_nth_newline_from_end(run, LINE_LIMIT + 1) + 1 :]
        self._pieces = [kept]
        self._size = len(kept)
        self._trim_at = max(self._min_window, 2 * self._size)


async def view_log(chunks: AsyncIterable[bytes], log_dir: Path) -> LogView:
    """Read a log stream into what the report shows; the full log goes to log_dir if long.

    If the stream fails (or is cancelled) the partial file is removed and the error re-raised.
    """
    acc = _LogAccumulator(log_dir)
    try:
        async for chunk in chunks:
            acc.feed(chunk)
        return acc.finish()
    except BaseException:
        acc.abort()
        raise


def view_log_bytes(data: bytes, log_dir: Path) -> LogView:
    """view_log for a log already in memory, fed in stream-sized slices."""
    acc = _LogAccumulator(log_dir)
    try:
        for i in range(0, len(data), _CHUNK):
            acc.feed(data[i : i + _CHUNK])
        return acc.finish()
    except BaseException:
        acc.abort()
        raise


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

    A span decoded from a cut inside the log starts after any UTF-8 continuation bytes, where
    the whole log's decoding is at a character boundary too, so the texts agree from there on.
    The span settles the tail once it holds the 100th line break from the end (the line start
    is then exact, and words are only counted after it) or more than WORD_LIMIT words (the word
    start is exact and lies after any line start outside the span), as in _tail_start.
    """
    span = _TAIL_SPAN
    while True:
        start = max(0, log.size - span)
        data = log.read(start, log.size - start)
        if start:
            skip = 0
            while skip < len(data) and 0x80 <= data[skip] <= 0xBF:
                skip += 1
            data = data[skip:]
        body = data.decode("utf-8", errors="replace").rstrip(_BREAKS)
        words = sum(1 for _ in islice(_WORD.finditer(body), WORD_LIMIT + 1))
        if not start or _nth_newline_from_end(body, LINE_LIMIT) >= 0 or words > WORD_LIMIT:
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


def _save_copy(log: _Joined, log_dir: Path, stop: threading.Event | None) -> Path | None:
    """The full log, byte for byte, in log_dir; None when it cannot be written.

    One file is hard-linked when it can be (same file system): the daemon never writes to a
    finished case's log again, it writes each run to a new file, so sharing it is safe and
    costs nothing. Otherwise the kernel copies the bytes.
    """
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        path = log_dir / f"{uuid.uuid4()}.txt"
        if len(log.files) == 1 and _link(log.files[0], path):
            return path
        out = path.open("xb")
    except OSError:
        return None
    try:
        with out:
            for file, size in zip(log.files, log.sizes, strict=True):
                _copy_range(file.fileno(), out.fileno(), size, stop)
    except OSError:
        path.unlink(missing_ok=True)
        return None
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def view_log_files(
    files: Sequence[BinaryIO], log_dir: Path, stop: threading.Event | None = None
) -> LogView:
    """view_log for logs on this machine's disk, concatenated: the daemon runs in our process.

    The bytes need not pass through Python: the head is decoded only until it holds more than
    WORD_LIMIT words, a longer log is copied by the kernel, and only its end is read for the
    tail. It blocks, so run it in a thread; setting `stop` ends it early (raising) with no file
    left. It closes the files it is given, whatever happens.
    """
    try:
        log = _Joined(files)
        acc = _LogAccumulator(log_dir, save=False)
        offset = 0
        while offset < log.size and not acc.truncated:
            if stop is not None and stop.is_set():
                raise _Stopped
            chunk = log.read(offset, _HEAD_CHUNK)
            acc.feed(chunk)
            offset += len(chunk)
        if not acc.truncated:
            return acc.finish()
        text = _tail_of(log)
        saved = _save_copy(log, log_dir, stop)
        if saved is not None and stop is not None and stop.is_set():
            saved.unlink(missing_ok=True)  # nobody is left to read it
            raise _Stopped
        return LogView(text, truncated=True, saved_path=saved, save_failed=saved is None)
    finally:
        for file in files:
            file.close()
