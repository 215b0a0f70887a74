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
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ssebench.daemon.confine.policy import CaseUser, inside
from ssebench.daemon.confine.user import CASE_UID_BASE, SLOTS

XATTR = "system.posix_acl_access"
VERSION = 2
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
UNDEFINED = 0xFFFFFFFF
READ, WRITE, SEARCH = 4, 2, 1
OUR_UIDS = range(CASE_UID_BASE, CASE_UID_BASE + SLOTS * (1 << 22))
Entries = list[tuple[int, int, int]]  # (tag, perms, id), in the kernel's order


class AccessError(Exception):
    """An entry the file system refuses (read-only, no ACLs): the case cannot be confined."""


def decode(raw: bytes) -> Entries:
    (version,) = struct.unpack_from("<I", raw)
    if version != VERSION or (len(raw) - 4) % 8:
        raise ValueError("not a POSIX ACL")
    return [struct.unpack_from("<HHI", raw, 4 + 8 * i) for i in range((len(raw) - 4) // 8)]


def encode(entries: Entries) -> bytes:
    ordered = sorted(entries, key=lambda entry: (entry[0], entry[2]))
    return struct.pack("<I", VERSION) + b"".join(struct.pack("<HHI", *e) for e in ordered)


def _base(mode: int) -> Entries:
    return [
        (USER_OBJ, (mode >> 6) & 7, UNDEFINED),
        (GROUP_OBJ, (mode >> 3) & 7, UNDEFINED),
        (OTHER, mode & 7, UNDEFINED),
    ]


def allows(user: CaseUser, info: os.stat_result, entries: Entries | None, want: int) -> bool:
    """Whether `user`, with no capability and no supplementary group, has `want` on the file."""
    if info.st_uid == user.uid:
        return (info.st_mode >> 6) & want == want
    entries = entries if entries is not None else _base(info.st_mode)
    mask = next((p for tag, p, _ in entries if tag == MASK), 7)
    named = [p for tag, p, who in entries if tag == USER and who == user.uid]
    if named:
        return named[0] & mask & want == want
    groups = [p for tag, p, who in entries if tag == GROUP and who == user.gid]
    if info.st_gid == user.gid:
        groups.append(next(p for tag, p, _ in entries if tag == GROUP_OBJ))
    if groups:
        return any(p & mask & want == want for p in groups)
    return next(p for tag, p, _ in entries if tag == OTHER) & want == want


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


class View:
    """The entries applied for one user, changed as the checks' plans change, all removed at
    the end."""

    def __init__(self, user: CaseUser) -> None:
        self.user = user
        self.applied: dict[str, int] = {}

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
            _edit_entry(fd, self.user.uid, perms)
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


def _kept(entry: tuple[int, int, int], uid: int) -> bool:
    """Named entries to keep: all but this user's, and but those of ssebench's own uids whose
    daemon is gone (left by one that was killed)."""
    tag, _, who = entry
    if tag != USER or who == uid:
        return tag == GROUP
    if who in OUR_UIDS:
        return os.path.exists(f"/proc/{(who - CASE_UID_BASE) // SLOTS}")
    return True


def _edit_entry(fd: int, uid: int, perms: int | None) -> None:
    """The entry of `uid` set to `perms` (None: removed), nobody else's effective permissions
    changed: the mask is widened by our bits only where no other entry would gain by it, and
    a file left with no named entry loses its ACL, its group bits the group's effective ones."""
    mode = os.fstat(fd).st_mode
    try:
        entries = decode(os.getxattr(fd, XATTR))
    except OSError as exc:
        if exc.errno not in (errno.ENODATA, errno.EOPNOTSUPP):
            raise
        entries = []
    if not entries:
        entries = _base(mode)
    old_mask = next((p for tag, p, _ in entries if tag == MASK), None)
    group = next(p for tag, p, _ in entries if tag == GROUP_OBJ)
    others = [e for e in entries if e[0] in (USER, GROUP) and _kept(e, uid)]
    base = [e for e in entries if e[0] in (USER_OBJ, GROUP_OBJ, OTHER)]
    if perms is None and not others:
        if old_mask is not None:
            os.removexattr(fd, XATTR)
            os.fchmod(fd, (stat.S_IMODE(mode) & ~0o070) | (group & old_mask) << 3)
        return
    mask = group if old_mask is None else old_mask
    if perms is not None:
        gained = perms & ~mask
        if gained and any(p & gained for tag, p, _ in [*others, (GROUP_OBJ, group, 0)]):
            raise OSError(errno.EPERM, "its ACL's mask would let other users in too")
        mask |= perms
        others.append((USER, perms, uid))
    os.setxattr(fd, XATTR, encode([*base, *others, (MASK, mask, UNDEFINED)]))
