"""The runner copy: the tree the cases run on, never the agent's own.

A case never writes the agent's tree. The daemon keeps a copy of it in its private folder,
owned by the case user, and brings it up to date before every case: what the agent added or
changed (by size, mtime, ctime and mode; ctime cannot be forged without privilege) is copied,
what it removed since the last sync is removed, and what the builds produced in the copy stays,
so incremental builds stay incremental and the build's outputs never appear in the agent's tree.

What the sync carries is what a prediction carries (evaluate/treediff.py), so that test_patch
builds what grading will build: the first sync copies the tree whole (the tree as shipped:
vendored and ignored folders included, `.git` too); later ones carry every file the first one
saw, and new files that the shipped tree's .gitignore does not exclude. The agent's own build
outputs (an in-tree CMake cache, which names the tree's path and breaks in a copy elsewhere;
object files) are not carried, as a patch would not carry them; nor is anything under `.git`.

The agent's tree and the copy are both walked by descriptors, never through a symbolic link:
the agent could swap a folder for a link to /root while we copy, and a case could leave a link
in the copy where the next sync writes. Grading's pristine copy is a runner copy too: adopted,
it is handed to the case user as it is and never synced.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ssebench.core.gitignore import Ignore
from ssebench.core.toolfiles import RUNNER_MODULES, tree_rules
from ssebench.daemon.confine.policy import CaseUser
from ssebench.daemon.guard import make_folder, remove_folder, remove_tree
from ssebench.daemon.protect import read_lines
from ssebench.daemon.treefiles import DIR_FLAGS, FILE_FLAGS, clear, copy_bytes, is_folder, remove

SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID  # never carried: the copy is the case user's


@dataclass(frozen=True)
class Seen:
    """What a file of the agent's tree was at the last sync."""

    size: int
    mtime: int
    ctime: int
    mode: int
    ino: int

    @classmethod
    def of(cls, info: os.stat_result) -> Seen:
        return cls(info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_mode, info.st_ino)


class SyncError(OSError):
    """The copy could not be brought up to date (a full disk, say): a fault, not the patch's.
    `reason` is the system's word for it."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class RunnerCopy:
    """A copy of `origin` for cases run as `user`; `adopt` takes `origin` itself (a grade's
    scratch copy, ours already) instead of copying it."""

    def __init__(
        self,
        origin: Path,
        user: CaseUser,
        *,
        adopt: bool = False,
        protected: tuple[str, ...] = (),
        modules: frozenset[str] = RUNNER_MODULES,
    ) -> None:
        self.origin = origin
        self.user = user
        self.adopted = adopt
        # The grade's rules (core/toolfiles.py) as the first sync found the tree: protected
        # paths keep what it found, and what a patch may not add is not carried, so test_patch
        # sees what grading will.
        self.protected, self.modules = protected, modules
        self.frozen: Ignore | None = None
        self.fresh_only = Ignore.of([])
        self.kept: set[str] = set()
        self.folder: Path | None = None
        self.seen: dict[str, Seen] = {}  # every file and folder the sync carries, by path
        self.ignore: Ignore | None = None
        self.synced = False
        if adopt:
            self.path = origin
        else:
            self.folder = make_folder("ssebench-runner-")
            self.path = self.folder / (origin.name or "source")

    def sync(self) -> None:
        """Bring the copy up to date with the agent's tree; SyncError when it cannot."""
        try:
            if self.adopted:
                if not self.synced:
                    self._hand_over()
            elif not self.synced:
                os.mkdir(self.path, 0o700)
                self._sync()
                self.ignore = Ignore(self.path)
                self._keep_to_the_rules()
            else:
                self._sync()
        except OSError as exc:
            why = f"cannot bring the runner copy of {self.origin} up to date: {exc}"
            raise SyncError(why, exc.strerror or str(exc)) from None
        self.synced = True

    def _keep_to_the_rules(self) -> None:
        """The grade's rules for this tree, read from the copy as the first sync made it."""
        folders = {p for p, seen in self.seen.items() if stat.S_ISDIR(seen.mode)}
        entries = ((path, path in folders) for path in self.seen)
        read = functools.partial(read_lines, self.path)
        rules = tree_rules(entries, self.protected, read, self.modules)
        self.fresh_only = Ignore.of(rules.no_add)
        if rules.protected:
            self.frozen = Ignore.of(rules.protected)
            self.kept = {p for p in self.seen if self.frozen.excludes(p, p in folders)}

    def _hand_over(self) -> None:
        """An adopted tree becomes the case user's (no process of the agent's can reach it)."""
        if not self.user.switched:
            return
        owner = f"{self.user.uid}:{self.user.gid}"
        chown = shutil.which("chown")
        if chown is not None:
            done = subprocess.run([chown, "-hR", owner, str(self.path)], capture_output=True)
            if done.returncode == 0:
                return
        for here, folders, files in os.walk(self.path):
            for name in (".", *folders, *files):
                os.lchown(os.path.join(here, name), self.user.uid, self.user.gid)

    def _sync(self) -> None:
        first = not self.synced
        source = os.open(self.origin, DIR_FLAGS)
        try:
            target = os.open(self.path, DIR_FLAGS)
            try:
                found: set[str] = set(self.kept)
                self._folder(source, target, "", found, first, track=True)
                if first:
                    self._own(target, os.fstat(source))
                for path in sorted(set(self.seen) - found, reverse=True):
                    remove(target, path)
                    del self.seen[path]
            finally:
                os.close(target)
        finally:
            os.close(source)

    def _carried(self, path: str, folder: bool, first: bool) -> bool:
        if first or path in self.seen:
            return True
        assert self.ignore is not None
        return not (self.ignore.excludes(path, folder) or self.fresh_only.excludes(path, folder))

    def _folder(
        self, source: int, target: int, prefix: str, found: set[str], first: bool, track: bool
    ) -> None:
        """The entries of one folder; `track` False for `.git`, copied once and never again
        (a prediction carries nothing of it: the copy keeps what was shipped)."""
        for entry in os.scandir(source):
            path = prefix + entry.name
            info = entry.stat(follow_symlinks=False)
            kind = stat.S_IFMT(info.st_mode)
            if kind not in (stat.S_IFDIR, stat.S_IFREG, stat.S_IFLNK):
                continue  # a FIFO, a socket, a device: git keeps none either
            is_dir = kind == stat.S_IFDIR
            if not first and self.frozen is not None and self.frozen.excludes(path, is_dir):
                continue  # protected: as shipped
            old = self.seen.get(path)
            if old is not None and stat.S_IFMT(old.mode) != kind:
                clear(target, entry.name)  # a file became a folder, or the other way round
                del self.seen[path]
            inner_track = track and not (kind == stat.S_IFDIR and entry.name == ".git")
            if (not first and not inner_track) or not self._carried(path, is_dir, first):
                continue
            if inner_track:
                found.add(path)
            if kind == stat.S_IFDIR:
                self._subfolder(source, target, entry.name, path, info, found, first, inner_track)
            elif self.seen.get(path) != Seen.of(info):
                self._copy(source, target, entry.name, info, fresh=first)
                if inner_track:
                    self.seen[path] = Seen.of(info)

    def _subfolder(
        self,
        source: int,
        target: int,
        name: str,
        path: str,
        info: os.stat_result,
        found: set[str],
        first: bool,
        track: bool,
    ) -> None:
        inner = os.open(name, DIR_FLAGS, dir_fd=source)
        try:
            if first:
                os.mkdir(name, 0o700, dir_fd=target)
            elif path not in self.seen or not is_folder(target, name):
                # New, or no longer a folder in the copy (a case left a link there): made again,
                # and everything of the agent's inside it copied again.
                clear(target, name, keep_folder=True)
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=target)
                if path in self.seen:
                    for inner_path in [p for p in self.seen if p.startswith(path + "/")]:
                        del self.seen[inner_path]
            made = os.open(name, DIR_FLAGS, dir_fd=target)
            try:
                self._folder(inner, made, path + "/", found, first, track)
                if self.seen.get(path) != Seen.of(info):
                    self._own(made, info)  # after its entries: a read-only folder is the agent's
                    if track:
                        self.seen[path] = Seen.of(info)
            finally:
                os.close(made)
        finally:
            os.close(inner)

    def _copy(
        self, source: int, target: int, name: str, info: os.stat_result, *, fresh: bool
    ) -> None:
        """One file or link of the agent's tree into the copy, as the case user's, its times
        kept (so make sees what changed). Into a copy that has one already, under a new name
        first, then renamed over what the copy has there."""
        temp = name if fresh else f".ssebench-sync-{name}"[:255]
        if not fresh:
            clear(target, temp)
        if stat.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(name, dir_fd=source), temp, dir_fd=target)
            if self.user.switched:
                os.chown(temp, self.user.uid, self.user.gid, dir_fd=target, follow_symlinks=False)
        else:
            reader = os.open(name, FILE_FLAGS, dir_fd=source)
            try:
                if not stat.S_ISREG(os.fstat(reader).st_mode):
                    return  # swapped since it was listed: the next sync takes it
                writer = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                                 0o600, dir_fd=target)  # fmt: skip
                try:
                    copy_bytes(reader, writer)
                    self._own(writer, info)
                finally:
                    os.close(writer)
            finally:
                os.close(reader)
        times = (info.st_atime_ns, info.st_mtime_ns)
        os.utime(temp, ns=times, dir_fd=target, follow_symlinks=False)
        if not fresh:
            clear(target, name)
            os.rename(temp, name, src_dir_fd=target, dst_dir_fd=target)

    def _own(self, fd: int, info: os.stat_result) -> None:
        if self.user.switched:
            os.fchown(fd, self.user.uid, self.user.gid)
        os.fchmod(fd, stat.S_IMODE(info.st_mode) & ~SPECIAL_BITS)

    def close(self) -> None:
        """Remove the copy (an adopted one is its maker's to remove)."""
        if self.folder is not None:
            remove_folder(self.folder, remove_tree)
            self.folder = None
