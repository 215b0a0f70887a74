"""One sync of the runner copy: the agent's tree walked once beside the copy, at any depth.

The walk holds one descriptor per tree (treefiles.Chain) and a stack of the folders it is in,
so a folder chain deeper than any path, than the descriptors a process may hold or than
Python's recursion is one folder more. Each change is carried when it is met, and the model of
the copy updated right after it: a sync stopped anywhere (a full disk, a tree over its bound)
leaves a model that says what the copy holds, and the next sync finishes the work. What the
agent removed goes when the folder that held it is met, but what task.toml protects: the copy
keeps it as shipped. What the tree holds is counted as it is met (sizes as `ls -l` gives them),
and a file that would take the count past the bound is never copied.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from ssebench.core.gitignore import Ignore
from ssebench.daemon.confine.policy import CaseUser
from ssebench.daemon.confine.walk import DIR_FLAGS, GONE, Chain, Moved, listing
from ssebench.daemon.filecopy import carry, is_output, own
from ssebench.daemon.treefiles import clear, is_folder, read_file, shown, writable
from ssebench.daemon.treemodel import Folder, Seen, TreeRefused, over_bound

CARRIED = (stat.S_IFDIR, stat.S_IFREG, stat.S_IFLNK)  # a FIFO, a socket, a device: git keeps none


@dataclass(frozen=True)
class Rules:
    """What one sync carries: the first takes the tree whole (as shipped, `.git` too); later
    ones what the first took, and new files the shipped .gitignore (`ignore`) keeps and a patch
    may add (not `fresh_only`'s: core/toolfiles.py), never `frozen` (protected) paths nor `.git`,
    nor a file whose bytes are a build output. `limit`: bytes the tree may hold."""

    user: CaseUser
    first: bool
    limit: int
    frozen: Ignore | None = None
    ignore: Ignore | None = None
    fresh_only: Ignore | None = None


@dataclass(eq=False)
class _Frame:
    """A folder the walk is in: its entries still to see (None: one the agent removed, to walk
    for what is protected inside), its model (None: not recorded, `.git`), the agent's folder
    (None: removed), and whether the shipped .gitignore excludes it."""

    name: str
    node: Folder | None
    info: os.stat_result | None
    todo: list[tuple[str, os.stat_result | None]]
    excluded: bool = False


class Sync:
    """One sync of the copy at `target` with the agent's tree at `source`, under `rules`; the
    model `root` says what the copy holds, and is kept so. `gitignores`: the .gitignore files
    the first sync copied, for the rules of later ones."""

    def __init__(self, rules: Rules, root: Folder, source: Path, target: Path) -> None:
        self.rules, self.root = rules, root
        self.size, self.largest = 0, (0, "")  # bytes seen; the largest file's, and its path
        self.gitignores: list[tuple[str, bytes]] = []
        self.stack: list[_Frame] = []
        self.prefix = ""  # the deepest folder's path ("a/b/"), the only one kept (see Folder)
        try:
            self.source = Chain(os.open(source, DIR_FLAGS))
        except PermissionError as exc:
            self._refuse("", exc)
        try:
            self.target = Chain(os.open(target, DIR_FLAGS))
        except BaseException:
            self.source.close()
            raise

    def run(self) -> None:
        try:
            if writable(self.target.fd):
                self.root.seen = None
            self._push("", self.root, os.fstat(self.source.fd))
            while self.stack:
                if not self._advance():
                    self._finish()
        except Moved:
            raise TreeRefused(
                "a folder of the source tree was moved while it was copied, so this case did "
                "not run; call again"
            ) from None
        finally:
            self.source.close()
            self.target.close()

    def _push(self, name: str, node: Folder | None, info: os.stat_result | None) -> None:
        """Into a folder (the chains are there already): its entries to see, and what the agent
        removed from it gone."""
        parent, excluded = self.stack[-1] if self.stack else None, False
        if parent is not None:
            excluded = parent.excluded or self._new_excluded(self._path(name), True)
            self.prefix += name + "/"
        frame = _Frame(name, node, info, [], excluded)
        self.stack.append(frame)
        found = self._list() if info is not None else []
        frame.todo += found
        if node is not None and not self.rules.first:
            kept = {name for name, seen in found if stat.S_IFMT(seen.st_mode) in CARRIED}
            self._removed(frame, kept)  # a file that became a FIFO is gone too

    def _removed(self, frame: _Frame, names: set[str]) -> None:
        assert frame.node is not None
        for name in [name for name in frame.node.entries if name not in names]:
            folder = isinstance(frame.node.entries[name], Folder)
            if self._frozen(name, folder):
                continue  # protected: as shipped
            if folder and self.rules.frozen is not None:
                frame.todo.append((name, None))  # what is protected inside stays
            else:
                clear(self.target.fd, name)
                del frame.node.entries[name]

    def _advance(self) -> bool:
        """The deepest folder's entries, until one is a folder to go into (True) or none is
        left (False)."""
        frame = self.stack[-1]
        while frame.todo:
            name, info = frame.todo.pop()
            entered = self._into_removed(name) if info is None else self._entry(frame, name, info)
            if entered:
                return True
        return False

    def _entry(self, frame: _Frame, name: str, info: os.stat_result) -> bool:
        node = frame.node
        old = node.entries.get(name) if node is not None else None
        if old.__class__ is Seen and self.rules.frozen is None and old == Seen.of(info):
            self._count(name, info)  # unchanged since the last sync: most files, at once
            return False
        kind = stat.S_IFMT(info.st_mode)
        is_dir = kind == stat.S_IFDIR
        first = self.rules.first
        if kind not in CARRIED or (not first and ((is_dir and name == ".git") or node is None)):
            return False  # `.git`: copied once, never again (a prediction carries none of it)
        if not first and self._frozen(name, is_dir):
            return False  # protected: as shipped
        if node is not None and old is not None and _kind(old) != kind:
            clear(self.target.fd, name)  # a file became a folder, or the other way round
            del node.entries[name]
            old = None
        if old is None and not first and not self._carried(frame, name, is_dir):
            return False  # a new file the shipped .gitignore excludes: a build output
        self._count(name, info)
        if is_dir:
            inner = old if isinstance(old, Folder) else None
            return self._enter(name, inner, track=node is not None and name != ".git")
        if old != Seen.of(info) and not first and is_output(self.source.fd, name, info):
            return False  # build outputs come from the build: the copy keeps what it had
        if old != Seen.of(info) and self._copy(name, info) and node is not None:
            node.entries[name] = Seen.of(info)
            if first and name == ".gitignore" and kind == stat.S_IFREG:
                self.gitignores.append((self.prefix, read_file(self.target.fd, name)))
        return False

    def _count(self, name: str, info: os.stat_result) -> None:
        self.size += info.st_size
        if info.st_size > self.largest[0] and stat.S_ISREG(info.st_mode):
            self.largest = (info.st_size, self._path(name))
        if self.size > self.rules.limit:
            raise over_bound(self.rules.limit, self.largest)

    def _enter(self, name: str, node: Folder | None, *, track: bool) -> bool:
        """Into the agent's folder `name` and the copy's (made, or made again when a case left
        something else there; then everything of the agent's inside is copied again)."""
        try:
            info = self.source.down(name)
        except OSError as exc:
            if exc.errno in GONE:
                return False  # gone since it was listed: the next sync sees what is there
            self._refuse(name, exc)
        try:
            parent = self.stack[-1].node
            fd = self.target.fd
            if self.rules.first:
                os.mkdir(name, 0o700, dir_fd=fd)
            elif node is None or not is_folder(fd, name):
                clear(fd, name, keep_folder=True)  # a build's folder of that name stays
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=fd)
                node = None
            self.target.down(name)
            if track and parent is not None:
                node = parent.entries[name] = node or Folder()
                if writable(self.target.fd):
                    node.seen = None  # its modes are made the agent's again after its entries
        except BaseException:
            self.source.up()
            raise
        self._push(name, node if track else None, info)
        return True

    def _into_removed(self, name: str) -> bool:
        """Into a folder the agent removed, for what is protected inside (the rest goes)."""
        node = self.stack[-1].node
        assert node is not None
        inner = node.entries[name]
        if not isinstance(inner, Folder) or not is_folder(self.target.fd, name):
            clear(self.target.fd, name)
            del node.entries[name]
            return False
        self.target.down(name)
        self._push(name, inner, None)
        return True

    def _finish(self) -> None:
        """Out of the deepest folder: its modes made the agent's (after its entries: a read-only
        folder is the agent's), or, removed by the agent with nothing protected inside, gone."""
        frame = self.stack.pop()
        node, info = frame.node, frame.info
        if info is not None and (node is None or node.seen != Seen.of(info)):
            own(self.target.fd, info, self.rules.user)
            if node is not None:
                node.seen = Seen.of(info)
        if not self.stack:
            return
        self.prefix = self.prefix[: len(self.prefix) - len(frame.name) - 1]
        if info is not None:
            self.source.up()
        self.target.up()
        parent = self.stack[-1].node
        if info is None and node is not None and parent is not None and not node.entries:
            clear(self.target.fd, frame.name)
            del parent.entries[frame.name]

    def _copy(self, name: str, info: os.stat_result) -> bool:
        """One file or link of the agent's into the copy (daemon/filecopy.py); into a copy that
        has one, under a new name first. False when it is gone or another kind since listed."""
        first = self.rules.first
        temp = name if first else f".ssebench-sync-{secrets.token_hex(8)}"
        fd = self.target.fd
        try:
            try:
                if not carry(self.source.fd, fd, name, temp, info, self.rules.user):
                    return False
            except PermissionError as exc:
                self._refuse(name, exc)
            if not first:
                clear(fd, name)
                os.rename(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            if not first:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=fd)
            raise
        return True

    def _list(self) -> list[tuple[str, os.stat_result]]:
        try:
            return listing(self.source.fd)
        except PermissionError as exc:
            self._refuse("", exc)

    def _carried(self, frame: _Frame, name: str, is_dir: bool) -> bool:
        return not (frame.excluded or self._new_excluded(self._path(name), is_dir))

    def _new_excluded(self, path: str, is_dir: bool) -> bool:
        """Whether a new entry at `path` stays out: a build output by the shipped .gitignore,
        or what a patch may not add."""
        rules = (self.rules.ignore, self.rules.fresh_only)
        return any(rule is not None and rule.excludes_itself(path, is_dir) for rule in rules)

    def _frozen(self, name: str, is_dir: bool) -> bool:
        frozen = self.rules.frozen
        return frozen is not None and frozen.excludes_itself(self._path(name), is_dir)

    def _path(self, name: str) -> str:
        """`name` in the deepest folder, as a path of the tree."""
        return self.prefix + name

    def _refuse(self, name: str, exc: OSError) -> NoReturn:
        """A file or folder of the agent's this process may not read is the agent's doing (a
        mode it set); any other error reading it is the machine's."""
        if not isinstance(exc, PermissionError):
            raise exc
        path = (self.prefix + name).rstrip("/") or "."
        raise TreeRefused(
            f"the source tree cannot be copied: {shown(path)} cannot be read "
            f"({exc.strerror or exc}), so this case did not run",
            exc.strerror or str(exc),
        ) from None


def _kind(entry: Seen | Folder) -> int:
    return stat.S_IFDIR if isinstance(entry, Folder) else stat.S_IFMT(entry.mode)
