"""Withheld files moved out of sight, each put back exactly as it was.

Landlock checks neither `stat` nor a lookup, and no ACL entry refuses them: a withheld file in
a folder a case's user may look into (ARVO's /tmp/poc) would give away that it exists, its size
and its owner. So such a file is moved away, by a rename on its own file system (the inode
moves: content, mode, owner, times, ACLs, and a Landlock rule made on it, stay), into a stash
only root may enter (stashfolder.py), while the cases that may not have it run; `ssebench run`
keeps there what the level withholds while the agent runs. The journal is written before
anything moves, and a holder record for each process that keeps a file away: the file goes back
when the last living holder lets go, or, should they all die (SIGKILL), at the next `recover`.

Putting back never writes through a link: the folder is reached by descriptors that follow
none, and must be the folder the file was taken from; whatever was planted at the path while
the file was away (a file, a link, a folder) is moved aside into the stash and removed first,
so what lies there afterwards is the real file, never the planted one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
from collections.abc import Callable

from ssebench.daemon.confine.policy import Policy
from ssebench.daemon.confine.stashfolder import (
    ITEM,
    Holder,
    Identity,
    StashError,
    StashFolder,
    add_holder,
    entry_name,
    exists,
    folder_identity,
    holders,
    identity,
    open_folder,
    read_place,
    remove,
    rename,
    write_place,
)
from ssebench.daemon.guard import private_parent

__all__ = ["Hiding", "Stash", "StashError", "away", "stash_root"]
PLANTED = "planted-"
ATTEMPTS = 5  # a path planted again and again while its file goes back: given up after


def stash_root() -> str:
    """Where withheld files wait while out of sight: in ssebench's private folder (root's)."""
    return str(private_parent() / "stash")


def away(path: str) -> bool:
    """Whether the file at `path` is in the stash now (so there, though out of sight)."""
    return os.path.lexists(os.path.join(stash_root(), entry_name(path), ITEM))


class Stash:
    """One process's holds on the files it keeps away, in the stash at `root`."""

    def __init__(self, root: str) -> None:
        self.folder = StashFolder(root)
        self.holder = Holder.this()
        self.held: dict[str, Identity] = {}  # what we keep away now: path -> its file
        self.known: dict[str, Identity] = {}  # every file we took: a planted one never is
        self.notes: list[str] = []  # what was found on the way (a planted file removed)

    @property
    def root(self) -> str:
        return self.folder.root

    def hold(self, path: str) -> bool:
        """`path` away (moved now, or away already for another holder) until we let go; False
        when nothing is there. StashError when it cannot move (another file system, say)."""
        if path in self.held:
            return True
        with self.folder.locked(entry_name(path), create=True) as entry:
            assert entry is not None
            if exists(entry, ITEM):
                self.known.setdefault(path, tuple(read_place(entry)["item"]))
                add_holder(entry, self.holder)
            elif not self._take(entry, path):
                return False
        self.held[path] = self.known[path]
        return True

    def _take(self, entry: int, path: str) -> bool:
        """Move the file at `path` into the entry, the journal and our holder record first."""
        folder = self._open(path, f"cannot move {path}", "")
        try:
            name = os.path.basename(path)
            try:
                item = identity(os.lstat(name, dir_fd=folder))
            except FileNotFoundError:
                return False
            if self.known.setdefault(path, item) != item:
                raise StashError(f"{path} is not the file ssebench took from there before")
            write_place(
                entry, {"path": path, "folder": folder_identity(os.fstat(folder)), "item": item}
            )
            add_holder(entry, self.holder)
            try:
                rename(folder, name, entry, ITEM)
            except OSError as exc:
                os.unlink(self.holder.name, dir_fd=entry)
                other = "it lies on another file system: set TMPDIR to a folder on its own"
                why = other if exc.errno == errno.EXDEV else exc.strerror
                raise StashError(f"cannot move {path} into {self.root} ({why})") from None
            if identity(os.lstat(ITEM, dir_fd=entry)) != item:  # swapped under us: given back
                rename(entry, ITEM, folder, name)
                os.unlink(self.holder.name, dir_fd=entry)
                raise StashError(f"{path} changed while ssebench moved it")
            return True
        finally:
            os.close(folder)

    def release(self, path: str) -> list[int]:
        """We no longer keep `path` away: it goes back, unless other living processes keep it
        away (their pids are returned). StashError when it cannot go back (it stays)."""
        self.held.pop(path, None)
        with self.folder.locked(entry_name(path), create=False) as entry:
            if entry is None:
                return []
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.holder.name, dir_fd=entry)
            others = holders(entry)
            if others:
                return [holder.pid for holder in others]
            if exists(entry, ITEM):
                self._put_back(entry)
            return []

    def _put_back(self, entry: int) -> None:
        place = read_place(entry)
        path, name = str(place["path"]), os.path.basename(str(place["path"]))
        folder = self._open(path, f"cannot put {path} back", f"; it stays in {self.root}")
        try:
            if folder_identity(os.fstat(folder)) != tuple(place["folder"]):
                raise StashError(
                    f"cannot put {path} back: {os.path.dirname(path)} is not the folder it was "
                    f"taken from; it stays in {self.root}"
                )
            for attempt in range(ATTEMPTS):
                try:
                    rename(entry, ITEM, folder, name)
                    return
                except OSError as exc:
                    if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                        why = f"{exc.strerror}; it stays in {self.root}"
                        raise StashError(f"cannot put {path} back ({why})") from None
                # Planted while it was away: the real file takes its place, never the reverse.
                aside = f"{PLANTED}{attempt}"
                remove(entry, aside)
                try:
                    rename(folder, name, entry, aside)
                except FileNotFoundError:
                    continue
                remove(entry, aside)
                self.notes.append(f"{path}: removed what was put there while it was away")
            raise StashError(f"cannot put {path} back: something is put there again and again")
        finally:
            os.close(folder)

    @staticmethod
    def _open(path: str, cannot: str, where: str) -> int:
        """The folder of `path`; StashError starting with `cannot` and ending with `where`."""
        try:
            return open_folder(os.path.dirname(path))
        except OSError as exc:
            raise StashError(f"{cannot} ({os.path.dirname(path)}: {exc.strerror}{where})") from None

    def close(self) -> list[str]:
        """Let go of everything we keep away; what cannot go back is said (it stays)."""
        problems = []
        for path in list(self.held):
            try:
                self.release(path)
            except StashError as exc:
                problems.append(str(exc))
        return problems

    def recover(self) -> list[str]:
        """Every file whose holders all died put back: what was put back, and what could not
        go back (it stays in the stash for the next try), one line each."""
        said = []
        for name in self.folder.names():
            with self.folder.locked(name, create=False) as entry:
                if entry is None or holders(entry) or not exists(entry, ITEM):
                    continue
                try:
                    self._put_back(entry)
                except StashError as exc:
                    said.append(str(exc))
                    continue
                path = read_place(entry)["path"]
                said.append(
                    f"put back {path}, which an ssebench process that was killed had kept away"
                )
        return said + self.notes


class Hiding:
    """The case supervisor's stash: before each case, every file its check may not have (its
    policy's `moved_away`) away, and every other one it took back in place. A file is opened
    (`pin`) before it first moves: a Landlock rule made while it is away reaches it by that
    descriptor, as a rule follows its file through a rename."""

    def __init__(self, stash: Stash, pin: Callable[[str, int], None]) -> None:
        self.stash = stash
        self.pin = pin
        self.pinned: set[str] = set()

    @staticmethod
    def planned(policy: Policy) -> Policy:
        """`policy` as the case user's entries are planned for it: what moves away needs none."""
        kept = tuple(path for path in policy.withheld if path not in policy.moved_away)
        return dataclasses.replace(policy, withheld=kept)

    def show(self, policy: Policy) -> None:
        """Back in place what `policy`'s cases may have (before its user's permissions are
        shaped); StashError when another process keeps one away."""
        for path in [path for path in self.stash.held if path not in policy.moved_away]:
            if others := self.stash.release(path):
                pids = ", ".join(map(str, others))
                raise StashError(
                    f"{path} is kept away from every case by another ssebench process (pid "
                    f"{pids}): `ssebench run` while the level withholds it, or another daemon "
                    "of this task"
                )

    def hide(self, policy: Policy) -> None:
        """Away what `policy`'s cases may not have (once their permissions are shaped)."""
        for path in policy.moved_away:
            if path not in self.pinned:
                self.pinned.add(path)
                with contextlib.suppress(OSError):  # not there: nothing to move, nor to reach
                    self.pin(path, os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC))
            self.stash.hold(path)

    def close(self) -> list[str]:
        return self.stash.close()
