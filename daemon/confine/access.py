"""The case user's own permissions, shaped for one check: POSIX ACL entries for its uid alone.

A case user owns nothing, so what it can reach of the machine is what any other user could;
two things must change that, on the paths the task names, and nothing else:
- Granted files that the deployment locks away (a task folder of mode 0700, say) must reach
  the case user and no one else: an entry `user:<uid>:--x` on each folder on the way, and
  `r` (`r-x` for folders) on what inside the grant its permissions would refuse.
- Under Landlock, which checks neither `stat` nor a lookup, a withheld file the case user could
  look at (the task folder being open to all, say) would still give away its name and size (so
  how many PoCs there are, and which input a patched binary should recognise): every withheld
  entry it could reach gets `user:<uid>:---`, which refuses it whatever the other bits say.
  Only the folder's own entry stays visible (its name, not what it holds).

The entries are written as the `system.posix_acl_access` attribute (no `setfacl` needed), under
an flock of the file, since grades side by side edit the same task folder's entries (each
its own uid's); they are removed when the supervisor ends, and entries of ssebench's own uids
whose daemon is gone are dropped whenever a file is edited.

No entry hides a `stat`, nor a name in a folder anyone may look into (ARVO's /tmp/poc): under
Landlock the withheld files outside the task folder are moved out of sight instead (stash.py).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from ssebench.daemon.confine.acl import (
    READ,
    SEARCH,
    USER,
    XATTR,
    Entries,
    allows,
    decode,
    edit_entry,
)
from ssebench.daemon.confine.policy import CaseUser, Policy, inside
from ssebench.daemon.confine.stash import Hiding, Stash, StashError


class AccessError(Exception):
    """An entry the file system refuses (read-only, no ACLs): the case cannot be confined."""


def _has_acl(path: str) -> Entries | None:
    try:
        return decode(os.getxattr(path, XATTR))
    except OSError:
        return None


def _can(user: CaseUser, path: str, want: int, *, missing: bool = True, ours: bool = False) -> bool:
    """Whether `user` has `want` on `path`: by its permissions as they are (`ours`), or as
    they would be without the entries we gave it (what a plan is made from, whichever
    check's entries are in force now)."""
    try:
        info = os.stat(path)
    except OSError:
        return missing  # nothing there to open up or to hide
    entries = _has_acl(path)
    if entries is not None and not ours:
        entries = [e for e in entries if not (e[0] == USER and e[2] == user.uid)]
    return allows(user, info, entries, want)


def readable(user: CaseUser, shape: Shape, path: str) -> bool:
    """Whether `user` reads `path` by its own permissions (the entries in force included), and
    passes the folders on the way where the mechanism walks real paths."""
    if not user.switched:
        return os.access(path, os.R_OK)  # the daemon's own user: its groups count too
    folders = list(_ancestors(path)) if shape.paths else []
    search = all(_can(user, folder, SEARCH, ours=True) for folder in folders)
    return search and _can(user, path, READ, missing=False, ours=True)


def _ancestors(path: str) -> Iterator[str]:
    folder = os.path.dirname(path)
    while folder not in ("/", ""):
        yield folder
        folder = os.path.dirname(folder)
    yield "/"


def _interior(root: str) -> Iterator[tuple[str, bool]]:
    """`root` and everything in it (never through a link), with whether each is a folder."""
    try:
        info = os.lstat(root)
    except OSError:
        return
    if stat.S_ISLNK(info.st_mode):
        return
    yield root, stat.S_ISDIR(info.st_mode)
    if stat.S_ISDIR(info.st_mode):
        for here, folders, files in os.walk(root):
            for name in folders:
                path = os.path.join(here, name)
                yield path, not os.path.islink(path)
            for name in files:
                yield os.path.join(here, name), False


@dataclass(frozen=True)
class Shape:
    """How a mechanism needs the case user's permissions shaped: `paths` when the case walks
    the real paths (Landlock; bubblewrap binds each grant itself), `hide` when a withheld file
    the case user may look at would give away its name and size (Landlock)."""

    paths: bool
    hide: bool


def plan(
    user: CaseUser,
    shape: Shape,
    granted: Iterable[str],
    owned: Iterable[str],
    withheld: Iterable[str],
    public: Iterable[str] = (),
) -> dict[str, int]:
    """The entries `user` needs: path -> permissions (0 refuses). `granted` are the paths the
    case reads (a grant's name and its real path), `owned` what it owns (the runner copy, its
    folders: only the way there counts), `withheld` the task's own paths (the task folder,
    every check's files) that the grants are carved from.

    A folder opened on the way (one the user could not pass before: a task folder locked to
    root, the folder of a whole dataset) is opened for that way alone: every other entry in it
    is refused, so nothing the lock kept from the user becomes reachable by name."""
    wanted: dict[str, int] = {}
    granted, owned = list(dict.fromkeys(granted)), list(owned)
    targets = [*granted, *owned]
    if shape.paths:
        for path in targets:
            for folder in _ancestors(path):
                if not _can(user, folder, SEARCH):
                    wanted[folder] = SEARCH
        for folder in [path for path, perms in wanted.items() if perms == SEARCH]:
            for entry in _entries(folder):
                if not any(entry == t or inside(t, [entry]) for t in targets):
                    wanted.setdefault(entry, 0)
    for path in granted:
        for inner, is_folder in _interior(path):
            need = READ | SEARCH if is_folder else READ
            if not _can(user, inner, need):
                wanted[inner] = need
    if shape.hide:
        for path in withheld:
            for entry in _carved(path, [*granted, *public]):
                parent = os.path.dirname(entry)
                if parent in wanted or _can(user, parent, SEARCH):
                    wanted.setdefault(entry, 0)
    return wanted


def plan_policy(user: CaseUser, shape: Shape, policy: Policy, cases: str) -> dict[str, int]:
    """plan() for a check's policy, its cases' folders in `cases`."""
    granted = [p for g in policy.readable for p in (g.path, g.real)]
    owned = [*(g.real for g in policy.writable), cases]  # cases: the way to each case's own
    return plan(user, shape, granted, owned, policy.withheld, policy.public)


def _entries(folder: str) -> list[str]:
    """The folder's entries but links (a link's own name tells nothing, and holds no ACL)."""
    try:
        paths = [os.path.join(folder, name) for name in sorted(os.listdir(folder))]
    except OSError:
        return []
    return [path for path in paths if not os.path.islink(path)]


def _carved(hidden: str, granted: list[str]) -> Iterator[str]:
    """`hidden` less the grants: the entries that cover the rest of it (never a link: its own
    name tells nothing and holds no ACL; where it points is hidden where that lies)."""
    if os.path.islink(hidden) or any(hidden == g or inside(hidden, [g]) for g in granted):
        return  # a link, or granted, or in a grant
    if not any(inside(g, [hidden]) for g in granted):
        yield hidden
        return
    with contextlib.suppress(OSError):
        for entry in sorted(os.listdir(hidden)):
            yield from _carved(os.path.join(hidden, entry), granted)


class Confined(Protocol):
    """What a view needs of the mechanism's Confinement (mechanism.py, which imports this
    module): how it shapes permissions, and where it opens what the stash moves."""

    @property
    def shape(self) -> Shape: ...

    def pin(self, path: str, fd: int) -> None: ...


class View:
    """The entries applied for one user, changed as the checks' plans change, all removed at
    the end; and where `confined` leaves withheld files to permissions, which a `stat` passes
    (Landlock), those outside the task folder moved out of sight into `stash` (stash.py)."""

    def __init__(self, user: CaseUser, stash: str = "", confined: Confined | None = None) -> None:
        self.user = user
        self.applied: dict[str, int] = {}
        self.hiding: Hiding | None = None
        if confined is not None and confined.shape.hide and stash:
            self.hiding = Hiding(Stash(stash), confined.pin)

    def shape(self, policy: Policy, plan: Callable[[Policy], dict[str, int]]) -> None:
        """What the user reaches for `policy`'s check: the files it may have back in place,
        then the entries `plan` makes in force (none for what moves away), then the files it
        may not have away, with no entry of ours on them."""
        if self.hiding is None:
            self.apply(plan(policy))
            return
        self.hiding.show(policy)
        self.apply(plan(self.hiding.planned(policy)))
        self.hiding.hide(policy)

    def apply(self, wanted: dict[str, int]) -> None:
        """Exactly `wanted` in force: entries no longer wanted removed, new ones added."""
        for path in [p for p in self.applied if p not in wanted]:
            self._edit(path, None)
            del self.applied[path]
        for path, perms in wanted.items():
            if self.applied.get(path) != perms:
                self._edit(path, perms)
                self.applied[path] = perms

    def close(self) -> None:
        if self.hiding is not None:  # back first: the entries are undone on them
            with contextlib.suppress(OSError, StashError):
                self.hiding.close()
        errors = []
        for path in list(self.applied):
            try:
                self._edit(path, None)
            except AccessError as exc:
                errors.append(exc)
            del self.applied[path]
        if errors:
            raise errors[0]

    def _edit(self, path: str, perms: int | None) -> None:
        """Set (or with None remove) this user's entry on `path`, under the file's flock."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if perms is None or exc.errno == errno.ENOENT:
                return  # gone: nothing to undo, nothing to reach
            raise AccessError(f"{path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            edit_entry(fd, self.user.uid, perms)
        except OSError as exc:
            if perms is None:
                return  # best effort on the way out
            why = exc.strerror or str(exc)
            raise AccessError(
                f"{path}: cannot give uid {self.user.uid}, who runs the cases, its own access "
                f"there ({why}): ssebench needs a file system with POSIX ACLs it can write"
            ) from None
        finally:
            os.close(fd)
