"""Saved long logs: where they go, whose they are, how many a folder keeps, how the bytes get there.

The server may run as root while the agent runs as the source tree's owner, who must be able
to open the file a report names, and no other user: a saved log is given to that user and
readable by it only, in folders anyone may enter. Calls must not fill the disk: a folder keeps
only the newest saved logs. The bytes need not pass through Python when the log lies on this
machine's disk: the kernel copies them, or the file itself is linked.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import threading
import uuid
from pathlib import Path

from ssebench.core.logsource import Joined

# Saved logs are pruned as new ones are saved: a folder keeps the newest KEEP_LOGS, fewer if
# they hold more than KEEP_BYTES together (the newest is always kept). The agent needs the file
# its latest report names; a call's log replaces the last call's as what it reads.
KEEP_LOGS = 10
KEEP_BYTES = 2 << 30
_SAVED_NAME = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.txt"
)
Owner = tuple[int, int]  # (uid, gid): whose a saved log is, so the agent can open it
_COPY_STEP = 64 << 20  # bytes the kernel copies between checks of `stop`


class Stopped(Exception):
    """The caller is gone (a cancelled call): the work ends at its next step, no file left."""


def check(stop: threading.Event | None) -> None:
    """Raise Stopped once `stop` is set."""
    if stop is not None and stop.is_set():
        raise Stopped


def _make_folder(folder: Path) -> None:
    """`folder` and its missing parents, each one the agent's user can enter (0755, whatever
    the umask): the files in it are the agent's own, each readable by its owner only.

    Each is changed through a descriptor that refuses a symbolic link: a parent the agent made
    first (/tmp/mcp, say) could otherwise have ours swapped for a link to a folder of root's.
    """
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            path.mkdir()
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            try:
                os.fchmod(fd, 0o755)
            finally:
                os.close(fd)


def prune(log_dir: Path, keep: int = KEEP_LOGS, keep_bytes: int = KEEP_BYTES) -> None:
    """Remove the saved logs beyond the newest `keep`, or beyond `keep_bytes` together (the
    newest stays whatever its size). Only files named as ssebench names them are touched."""
    found = []
    with contextlib.suppress(OSError), os.scandir(log_dir) as entries:
        for entry in entries:
            if _SAVED_NAME.fullmatch(entry.name):
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    found.append((info.st_mtime_ns, info.st_size, entry.path))
    total = 0
    for rank, (_, size, path) in enumerate(sorted(found, reverse=True)):
        total += size
        if rank >= keep or (rank and total > keep_bytes):
            with contextlib.suppress(OSError):
                os.unlink(path)


def new_log_path(log_dir: Path) -> Path:
    """Where the next saved log goes; the folder made if needed, older logs pruned to make
    room for it."""
    _make_folder(log_dir)
    prune(log_dir, KEEP_LOGS - 1)
    return log_dir / f"{uuid.uuid4()}.txt"


def hand_over(fd: int, owner: Owner | None) -> None:
    """The saved log open as `fd` is the agent's: its user's (when we may give it away),
    readable by it only. Through the descriptor, never the name: the folder may be the agent's,
    and a name swapped for a link would have root change another file."""
    if owner is not None and os.geteuid() == 0:
        os.fchown(fd, *owner)
    os.fchmod(fd, 0o600)


def _copy_range(source: int, target: int, size: int, stop: threading.Event | None) -> None:
    """Append `size` bytes of `source` (from its start) to `target`, copied by the kernel."""
    offset = 0
    copy = getattr(os, "copy_file_range", None)
    while offset < size:
        check(stop)
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


def write_whole(log: Joined, target: int, stop: threading.Event | None = None) -> None:
    """Every byte of `log` appended to the open file `target`: by the kernel from a part that is
    a file here, else as the part's chunks come. `stop` is looked at between steps."""
    for part in log.parts:
        fd = part.fileno()
        if fd is not None:
            _copy_range(fd, target, part.size, stop)
            continue
        written = 0
        for chunk in part.chunks():
            check(stop)
            view = memoryview(chunk)
            while view:
                view = view[os.write(target, view) :]
            written += len(chunk)
        if written != part.size:
            raise OSError(errno.EIO, f"a log of {part.size} bytes gave {written}")


def _link(fd: int, path: Path) -> bool:
    """Hard-link the open file itself (not whatever its name points to now) as `path`."""
    try:
        root = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        # A dir fd makes os.link call linkat, which can follow the /proc link; link() cannot.
        os.link(f"/proc/self/fd/{fd}", path, src_dir_fd=root, follow_symlinks=True)
    except OSError:  # another file system, no /proc, a file unlinked meanwhile: copy instead
        return False
    finally:
        os.close(root)
    return True


def save_log(
    log: Joined, log_dir: Path, stop: threading.Event | None = None, owner: Owner | None = None
) -> Path | None:
    """The whole log, byte for byte, saved in `log_dir` and given to `owner`; None when it
    cannot be written there (the report says so). A fault of the log's source is raised, and
    so is Stopped; either way no partial file is left.

    A log that is one file here is hard-linked when it can be (same file system): the daemon
    never writes to a finished case's log again, it writes each run to a new file, so sharing
    it is safe and costs nothing. Otherwise the kernel copies the files, and other sources are
    written as their chunks come.
    """
    try:
        path = new_log_path(log_dir)
        single = log.parts[0].fileno() if len(log.parts) == 1 else None
        if single is not None:
            hand_over(single, owner)  # the same file, if the link is made
            if _link(single, path):
                return path
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        try:
            write_whole(log, out, stop)
            hand_over(out, owner)
        finally:
            os.close(out)
    except OSError:
        path.unlink(missing_ok=True)
        return None
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path
