"""A case's sanitizer reports: the folder their runtimes write to, watched and copied into its log.

Every case's environment points the sanitizers' `log_path` into a folder of its own
(`Folders.reports`): its user may make files there but not list it (mode 1733, ours), and its
mechanism keeps the folder in place (bubblewrap binds it onto itself; Landlock lets the case
make regular files there and write them, nothing else). So a program that closes or redirects
its stderr no longer hides its report. The supervisor watches the folder (inotify), opens each
file as it appears and holds it open, and copies each file's new bytes into the case's log as
they come (whole lines, so no output splits a report's line), and once more when the case has
ended, before its log is closed: a report deleted, renamed or truncated later takes back
nothing copied.

Only regular files of the case's own user are read, never through a link: a symbolic or hard
link to someone else's file would copy it into a log the agent reads. Whatever else is there
is ignored and said in the log.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass

from ssebench.daemon.confine import inotify

NEW = inotify.IN_CREATE | inotify.IN_MOVED_TO  # a name that may be a file not seen before
MASK = NEW | inotify.IN_MODIFY | inotify.IN_CLOSE_WRITE
HELD = 64  # report files held open at most: a case cannot run the supervisor out of descriptors
NOTES = 8  # notes of entries ignored at most
LINE = 1 << 16  # an unfinished line longer than this is copied as it is
STEP = 1 << 20  # bytes read from one file at a time
READS = 16  # reads of the event queue per look while the case runs (at its end: all of it)
OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass
class Report:
    """A report file held open: `offset` bytes of it read, `pending` its unfinished line."""

    fd: int
    name: str
    offset: int = 0
    pending: bytes = b""


class Reports:
    """One case's report folder (`folder`, ours), its files made by `uid`, watched by a watch
    of `events` (the supervisor's one inotify instance) until `close`."""

    def __init__(self, folder: str, uid: int, events: inotify.Inotify) -> None:
        self.uid, self.events = uid, events
        self.dir = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            if os.fstat(self.dir).st_uid != os.geteuid():
                raise OSError(errno.EPERM, "the case's report folder is not ours", folder)
            self.wd = events.add(f"/proc/self/fd/{self.dir}", MASK)
        except BaseException:
            os.close(self.dir)
            raise
        self.held: dict[tuple[int, int], Report] = {}
        self.names: set[str] = set()
        self.notes: list[str] = []
        self.ignored = 0

    def fileno(self) -> int:
        return self.events.fileno()

    def take(self, room: int, final: bool = False) -> tuple[bytes, int, bool]:
        """(what to copy into the log: notes and new report bytes, the bytes past `room`
        skipped unread, whether more is left to take). `final`: the case has ended, so every
        event is read and every unfinished line copied."""
        self._look(final)
        out, skipped, more = [f"\n[ssebench: {note}]\n".encode() for note in self.notes], 0, False
        self.notes = []
        for report in self.held.values():
            size = os.fstat(report.fd).st_size
            new = b""
            if size > report.offset and room > 0:
                new = _read(report.fd, min(size - report.offset, room, STEP), report.offset)
                report.offset += len(new)
                room -= len(new)
                more = more or report.offset < size
            elif size > report.offset:  # past the log's limit: counted, never read
                skipped += size - report.offset
                report.offset = size
            data = report.pending + new
            cut = len(data) if final or len(data) > LINE else data.rfind(b"\n") + 1
            out.append(data[:cut])
            report.pending = data[cut:]
        return b"".join(out), skipped, more

    def _look(self, final: bool) -> None:
        """Open what appeared since the last look (by its event's name; every name, should
        the queue have overflowed)."""
        for wd, mask, name in self.events.events(1 << 20 if final else READS):
            if wd not in (self.wd, -1):
                continue  # an earlier case's (its watch is gone)
            if mask & inotify.IN_Q_OVERFLOW:
                for entry in os.listdir(self.dir):
                    self._open(entry)
            elif name and (mask & NEW or name not in self.names):
                self._open(name)

    def _open(self, name: str) -> None:
        try:
            info = os.stat(name, dir_fd=self.dir, follow_symlinks=False)
            if not self._ours(info):
                self._ignore(name, f"{_kind(info)}: it was not read")
                return
            if (info.st_dev, info.st_ino) in self.held:
                return
            if len(self.held) >= HELD:
                self._ignore(name, f"more than {HELD} files are there: it was not read")
                return
            fd = os.open(name, OPEN, dir_fd=self.dir)
        except OSError as exc:
            why = "it was removed before it could be read" if exc.errno == errno.ENOENT else ""
            self._ignore(name, why or f"it could not be opened: {exc.strerror}")
            return
        info = os.fstat(fd)
        if not self._ours(info) or (info.st_dev, info.st_ino) in self.held:
            os.close(fd)  # swapped since the look above
            return
        self.held[info.st_dev, info.st_ino] = Report(fd, name)
        self.names.add(name)

    def _ours(self, info: os.stat_result) -> bool:
        return stat.S_ISREG(info.st_mode) and info.st_uid == self.uid

    def _ignore(self, name: str, why: str) -> None:
        self.names.add(name)  # said once; a new file of that name is looked at again
        self.ignored += 1
        if self.ignored <= NOTES:
            self.notes.append(f"the sanitizer report folder holds {name!a}: {why}")
        elif self.ignored == NOTES + 1:
            self.notes.append("more entries of the sanitizer report folder were ignored")

    def close(self) -> None:
        for report in self.held.values():
            os.close(report.fd)
        self.held.clear()
        self.events.remove(self.wd)
        os.close(self.dir)


def _read(fd: int, count: int, offset: int) -> bytes:
    parts, total = [], 0
    while total < count:
        part = os.pread(fd, count - total, offset + total)
        if not part:
            break  # truncated meanwhile
        parts.append(part)
        total += len(part)
    return b"".join(parts)


def _kind(info: os.stat_result) -> str:
    if not stat.S_ISREG(info.st_mode):
        kinds = {stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a FIFO", stat.S_IFDIR: "a folder"}
        return f"it is {kinds.get(stat.S_IFMT(info.st_mode), 'not a regular file')}"
    return f"it is not the case user's (uid {info.st_uid})"
