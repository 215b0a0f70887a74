"""POSIX ACLs as the kernel keeps them (the `system.posix_acl_access` attribute), no setfacl
needed: what a user may do by them, and one user's entry set or removed without changing anyone
else's effective permissions."""

from __future__ import annotations

import errno
import os
import stat
import struct

from ssebench.daemon.confine.policy import CaseUser
from ssebench.daemon.confine.user import CASE_UID_BASE, SLOTS

XATTR = "system.posix_acl_access"
VERSION = 2
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
UNDEFINED = 0xFFFFFFFF
READ, WRITE, SEARCH = 4, 2, 1
OUR_UIDS = range(CASE_UID_BASE, CASE_UID_BASE + SLOTS * (1 << 22))
Entries = list[tuple[int, int, int]]  # (tag, perms, id), in the kernel's order


def decode(raw: bytes) -> Entries:
    (version,) = struct.unpack_from("<I", raw)
    if version != VERSION or (len(raw) - 4) % 8:
        raise ValueError("not a POSIX ACL")
    return [struct.unpack_from("<HHI", raw, 4 + 8 * i) for i in range((len(raw) - 4) // 8)]


def encode(entries: Entries) -> bytes:
    ordered = sorted(entries, key=lambda entry: (entry[0], entry[2]))
    return struct.pack("<I", VERSION) + b"".join(struct.pack("<HHI", *e) for e in ordered)


def base_entries(mode: int) -> Entries:
    return [
        (USER_OBJ, (mode >> 6) & 7, UNDEFINED),
        (GROUP_OBJ, (mode >> 3) & 7, UNDEFINED),
        (OTHER, mode & 7, UNDEFINED),
    ]


def allows(user: CaseUser, info: os.stat_result, entries: Entries | None, want: int) -> bool:
    """Whether `user`, with no capability and no supplementary group, has `want` on the file."""
    if info.st_uid == user.uid:
        return (info.st_mode >> 6) & want == want
    entries = entries if entries is not None else base_entries(info.st_mode)
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


def _kept(entry: tuple[int, int, int], uid: int) -> bool:
    """Named entries to keep: all but this user's, and but those of ssebench's own uids whose
    daemon is gone (left by one that was killed)."""
    tag, _, who = entry
    if tag != USER or who == uid:
        return tag == GROUP
    if who in OUR_UIDS:
        return os.path.exists(f"/proc/{(who - CASE_UID_BASE) // SLOTS}")
    return True


def edit_entry(fd: int, uid: int, perms: int | None) -> None:
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
        entries = base_entries(mode)
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
        # Only ssebench's own entries may gain by it (a chmod of the folder narrowed the mask
        # under them): another user's, or the group's, would be let in further.
        foreign = [e for e in others if e[2] not in OUR_UIDS] + [(GROUP_OBJ, group, 0)]
        if gained and any(p & gained for tag, p, _ in foreign):
            raise OSError(errno.EPERM, "its ACL's mask would let other users in too")
        mask |= perms
        others.append((USER, perms, uid))
    os.setxattr(fd, XATTR, encode([*base, *others, (MASK, mask, UNDEFINED)]))
