"""The runner copy: the tree the cases run on, never the agent's own.

A case never writes the agent's tree. The daemon keeps a copy of it in its private folder,
owned by the case user, and brings it up to date once as each call begins (every case of the
call runs on that state: one call, one tree): what the agent added or changed (by size, mtime,
ctime and mode; ctime cannot be forged without privilege) is copied, what it removed since the
last sync is removed, and what the builds produced in the copy stays, so incremental builds
stay incremental and the build's outputs never appear in the agent's tree.

What the sync carries is what a prediction carries (evaluate/treediff.py), so that test_patch
builds what grading will build: the first sync copies the tree whole (the tree as shipped:
vendored and ignored folders included, `.git` too); later ones carry every file the first one
saw, and new files that the shipped tree's .gitignore does not exclude. The agent's own build
outputs (an in-tree CMake cache, which names the tree's path and breaks in a copy elsewhere;
object files) are not carried, as a patch would not carry them; nor is anything under `.git`.

The agent's tree and the copy are both walked by descriptors, never through a symbolic link:
the agent could swap a folder for a link to /root while we copy, and a case could leave a link
in the copy where the next sync writes (daemon/treesync.py walks them, at any depth). Sparse
files stay sparse. A tree that holds more than `limits.tree_mb` (by its files' sizes, holes
included: a root daemon's copy is outside any case's disk limit) is not copied: each case of
the call fails with one line saying so (TreeRefused), as does one the agent made unreadable to
a non-root daemon. Grading's pristine copy is a runner copy too: adopted, it is handed to the
case user as it is (once its size is within the bound) and never synced.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from ssebench.core.gitignore import Ignore
from ssebench.core.toolfiles import RUNNER_MODULES, run_modules, tree_rules
from ssebench.daemon.confine.policy import CaseUser, Limits
from ssebench.daemon.confine.walk import DIR_FLAGS, entries
from ssebench.daemon.guard import make_folder, remove_folder, remove_tree
from ssebench.daemon.protect import read_lines
from ssebench.daemon.task import Task
from ssebench.daemon.treefiles import remove_path
from ssebench.daemon.treelook import tree_changed
from ssebench.daemon.treemodel import Folder, TreeRefused, over_bound
from ssebench.daemon.treesync import Rules, Sync

__all__ = ["RunnerCopy", "SyncError", "TreeRefused"]


class SyncError(OSError):
    """The copy could not be brought up to date (a full disk, say): a fault, not the patch's.
    `reason` is the system's word for it."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class RunnerCopy:
    """A copy of `origin` for cases run as `user`; `adopt` takes `origin` itself (a grade's
    scratch copy, ours already) instead of copying it. `tree_mb`: the most the tree may hold."""

    def __init__(
        self,
        origin: Path,
        user: CaseUser,
        *,
        adopt: bool = False,
        protected: tuple[str, ...] = (),
        tree_mb: int = Limits.tree_mb,
        modules: frozenset[str] = RUNNER_MODULES,
    ) -> None:
        self.origin = origin
        self.user = user
        self.adopted = adopt
        self.limit = tree_mb << 20
        # The grade's rules (core/toolfiles.py) as the first sync found the tree: protected
        # paths (and what protected build files stand for) keep what it found, and what a
        # patch may not add is not carried, so test_patch sees what grading will.
        self.protected, self.modules = protected, modules
        self.frozen: Ignore | None = None
        self.fresh_only: Ignore | None = None
        self.folder: Path | None = None
        self.root = Folder()  # what the copy holds of the agent's tree
        self.ignore: Ignore | None = None
        self.synced = False
        if adopt:
            self.path = origin
        else:
            self.folder = make_folder("ssebench-runner-")
            self.path = self.folder / (origin.name or "source")

    @classmethod
    def of(cls, task: Task, user: CaseUser, tree: Path | None = None) -> RunnerCopy:
        """The copy of `task`'s tree for its cases, or `tree` itself (a grade's scratch copy)."""
        adopt, protected = tree is not None, task.protected
        origin, tree_mb = tree or task.source, task.limits.tree_mb
        modules = run_modules(task.commands())
        return cls(origin, user, adopt=adopt, protected=protected, tree_mb=tree_mb,
                   modules=modules)  # fmt: skip

    def prepare(self) -> None:
        """The first sync, as the daemon starts: a tree over its bound is said by each case
        (TreeRefused), not here, where it would stop the daemon; one this process cannot read
        is the deployment's to fix (SyncError), not the agent's."""
        try:
            self.sync()
        except TreeRefused as refused:
            if refused.reason is not None:
                raise SyncError(refused.line, refused.reason) from None

    def sync(self) -> None:
        """Bring the copy up to date with the agent's tree; TreeRefused when the tree cannot be
        copied as it is (the agent's doing), SyncError when the machine fails it."""
        try:
            if self.adopted:
                if not self.synced:
                    self._hand_over()
            else:
                self._sync(first=not self.synced)
        except OSError as exc:
            why = f"cannot bring the runner copy of {self.origin} up to date: {exc}"
            raise SyncError(why, exc.strerror or str(exc)) from None
        self.synced = True

    def _sync(self, *, first: bool) -> None:
        if first:  # anew, whatever a first sync that stopped half way left
            remove_path(str(self.path))
            os.mkdir(self.path, 0o700)
            self.root = Folder()
        frozen, fresh_only = (None, None) if first else (self.frozen, self.fresh_only)
        rules = Rules(self.user, first, self.limit, frozen, self.ignore, fresh_only)
        walk = Sync(rules, self.root, self.origin, self.path)
        walk.run()
        if first:
            self.ignore = Ignore.of_files(walk.gitignores)
            self._keep_to_the_rules()

    def _keep_to_the_rules(self) -> None:
        """The grade's rules for this tree, read from the copy as the first sync made it."""
        read = functools.partial(read_lines, self.path)
        rules = tree_rules(self.root.paths(), self.protected, read, self.modules)
        self.frozen = Ignore.of(rules.protected) if rules.protected else None
        self.fresh_only = Ignore.of(rules.no_add)

    def changed(self) -> bool:
        """Whether the agent changed its tree since the last sync (daemon/treelook.py); an
        adopted tree is ours, which no agent changes."""
        return not self.adopted and tree_changed(self.origin, self.root, self.frozen)

    def _hand_over(self) -> None:
        """An adopted tree, once within its bound, becomes the case user's (no process of the
        agent's can reach it)."""
        top = os.open(self.path, DIR_FLAGS)
        try:
            self._measure(top)
            if not self.user.switched:
                return
            owner = f"{self.user.uid}:{self.user.gid}"
            chown = shutil.which("chown")
            if chown is not None:
                done = subprocess.run([chown, "-hR", owner, str(self.path)], capture_output=True)
                if done.returncode == 0:
                    return
            os.fchown(top, self.user.uid, self.user.gid)
            for folder, name, _, _ in entries(top):
                os.chown(name, self.user.uid, self.user.gid, dir_fd=folder, follow_symlinks=False)
        finally:
            os.close(top)

    def _measure(self, top: int) -> None:
        size, largest = 0, (0, "")
        for _, name, info, folders in entries(top):
            size += info.st_size
            if info.st_size > largest[0]:
                largest = (info.st_size, "/".join([*folders, name]))
            if size > self.limit:
                raise over_bound(self.limit, largest)

    def close(self) -> None:
        """Remove the copy (an adopted one is its maker's to remove)."""
        if self.folder is not None:
            remove_folder(self.folder, remove_tree)
            self.folder = None
