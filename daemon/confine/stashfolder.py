"""The stash's folder (stash.py): one entry per path moved away, each under an flock, with the
processes that keep it away and the journal of where it came from.

An entry is a folder named by the path's hash, 0700 as the stash is (in a parent only this
user may write: ssebench's private folder): `place` (JSON: where the file belongs, which file
it is, which folder it was taken from), `item` (the file itself, while away) and one
`holder-<pid>-<start>` per process that keeps it away; a holder whose process is gone counts
no more. An entry with neither item nor living holder is removed, and the stash with its last
entry. Names are reached by descriptors, never through a link.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ssebench.daemon.confine.procfs import start_time

RENAME_NOREPLACE = 1
FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
ITEM, PLACE, HOLDER = "item", "place", "holder-"
TRIES = 20  # entries and stashes removed under us while we take them: made again
_libc = ctypes.CDLL(None, use_errno=True)
# Which file, wherever it lies: device and inode, and (an inode number is reused once its file
# is gone) its mode, owner, size and modification time, none of which a rename changes.
Identity = tuple[int, ...]


class StashError(Exception):
    """A file that cannot be moved away or put back: it stays where it is, journal and all."""


@dataclass(frozen=True)
class Holder:
    """A process that keeps files away: its pid and when it started, one process for good."""

    pid: int
    start: int

    @classmethod
    def this(cls) -> Holder:
        return cls(os.getpid(), start_time(os.getpid()) or 0)

    @property
    def name(self) -> str:
        return f"{HOLDER}{self.pid}-{self.start}"

    @classmethod
    def named(cls, name: str) -> Holder | None:
        pid, _, start = name.removeprefix(HOLDER).partition("-")
        if not name.startswith(HOLDER) or not (pid.isdigit() and start.isdigit()):
            return None
        return cls(int(pid), int(start))

    def alive(self) -> bool:
        return start_time(self.pid) == self.start


def identity(info: os.stat_result) -> Identity:
    return info.st_dev, info.st_ino, info.st_mode, info.st_uid, info.st_size, info.st_mtime_ns


def folder_identity(info: os.stat_result) -> Identity:
    """A folder's: its entries come and go (so do its size and times), it stays itself."""
    return info.st_dev, info.st_ino


def rename(old_dir: int, old: str, new_dir: int, new: str) -> None:
    """renameat2(RENAME_NOREPLACE): never over anything, never through a link."""
    if _libc.renameat2(old_dir, old.encode(), new_dir, new.encode(), RENAME_NOREPLACE):
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def open_folder(path: str) -> int:
    """A descriptor of the folder `path`, reached from / following no link on the way."""
    fd = os.open("/", FOLDER)
    try:
        for part in filter(None, path.split("/")):
            inner = os.open(part, FOLDER, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def exists(folder: int, name: str) -> bool:
    try:
        os.lstat(name, dir_fd=folder)
    except FileNotFoundError:
        return False
    return True


def remove(folder: int, name: str) -> None:
    """`name` in `folder` gone, a folder whole, never following a link; what cannot go (a
    folder of mode 0, for a user but root) is left: clean-up is never an error."""
    with contextlib.suppress(OSError):
        if stat.S_ISDIR(os.lstat(name, dir_fd=folder).st_mode):
            shutil.rmtree(name, dir_fd=folder)
        else:
            os.unlink(name, dir_fd=folder)


def entry_name(path: str) -> str:
    return hashlib.sha256(path.encode()).hexdigest()[:32]


def holders(entry: int) -> list[Holder]:
    """The entry's living holders; a dead one's record goes."""
    living = []
    for name in os.listdir(entry):
        holder = Holder.named(name)
        if holder is not None and holder.alive():
            living.append(holder)
        elif holder is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=entry)
    return living


def add_holder(entry: int, holder: Holder) -> None:
    os.close(os.open(holder.name, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600, dir_fd=entry))


def write_place(entry: int, place: dict[str, Any]) -> None:
    """The journal, whole or not at all."""
    flags = os.O_CREAT | os.O_TRUNC | os.O_WRONLY | os.O_CLOEXEC
    with open(os.open(f"{PLACE}.new", flags, 0o600, dir_fd=entry), "w") as file:
        json.dump(place, file)
    os.rename(f"{PLACE}.new", PLACE, src_dir_fd=entry, dst_dir_fd=entry)


def read_place(entry: int) -> dict[str, Any]:
    with open(os.open(PLACE, os.O_RDONLY | os.O_CLOEXEC, dir_fd=entry)) as file:
        place: dict[str, Any] = json.load(file)
    return place


@dataclass(frozen=True)
class StashFolder:
    """The stash at `root` (made when first needed, in a parent this user's alone)."""

    root: str

    def names(self) -> list[str]:
        try:
            return os.listdir(self.root)
        except (FileNotFoundError, NotADirectoryError):
            return []

    @contextlib.contextmanager
    def locked(self, name: str, *, create: bool) -> Iterator[int | None]:
        """The entry `name`, flocked (None when there is none and `create` is false); on the
        way out, removed once it holds neither the file nor a living holder."""
        for _ in range(TRIES):
            fd = self._open_entry(name, create)
            if fd is None:
                yield None
                return
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_nlink:
                break
            os.close(fd)  # removed while we waited for it
        else:
            raise StashError(f"{self.root}: cannot take an entry there")
        try:
            yield fd
        finally:
            try:
                if not exists(fd, ITEM) and not holders(fd):
                    self._drop(fd, name)
            finally:
                os.close(fd)

    def _open_entry(self, name: str, create: bool) -> int | None:
        for _ in range(TRIES):
            root = self._open_root(create)
            if root is None:
                return None
            try:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o700, dir_fd=root)
                return os.open(name, FOLDER, dir_fd=root)
            except FileNotFoundError:
                if not create:
                    return None  # else another removed the stash meanwhile: made again
            finally:
                os.close(root)
        raise StashError(f"{self.root}: cannot make an entry there")

    def _open_root(self, create: bool) -> int | None:
        """The stash, checked to be ours alone (and its parent ours, written by no one else)."""
        parent, base = os.path.split(self.root)
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(parent, 0o711)
        try:
            outer = os.open(parent, FOLDER)
        except FileNotFoundError:
            return None
        try:
            _own(outer, parent, 0o022)
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(base, 0o700, dir_fd=outer)
            root = os.open(base, FOLDER, dir_fd=outer)
        except FileNotFoundError:
            return None
        finally:
            os.close(outer)
        try:
            _own(root, self.root, 0o077)
        except BaseException:
            os.close(root)
            raise
        return root

    def _drop(self, entry: int, name: str) -> None:
        """An entry with nothing left: its journal, then it, then the stash if it is empty."""
        for left in os.listdir(entry):
            remove(entry, left)
        root = self._open_root(create=False)
        if root is None:
            return
        try:
            os.rmdir(name, dir_fd=root)
        except OSError:
            return  # something left in it: the next one to take it tries again
        finally:
            os.close(root)
        for folder in (self.root, os.path.dirname(self.root)):
            with contextlib.suppress(OSError):
                os.rmdir(folder)  # the last one out, as with ssebench's other folders


def _own(fd: int, path: str, others: int) -> None:
    """A folder of this user's whose `others` bits are clear (no one else writes or enters)."""
    info = os.fstat(fd)
    if info.st_uid != os.geteuid() or info.st_mode & others:
        raise StashError(f"{path} is not this user's own folder: ssebench keeps no file there")
