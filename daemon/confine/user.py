"""Who a case runs as, and the kernel's limits on it.

A root daemon runs its cases as a user of their own (upstream ssebench's `sse-runner`): a uid
that is neither root nor the agent's, with no capabilities and no supplementary groups, that
owns nothing on the machine but the case's runner copy and folders. So the kernel's own
permissions stand behind every mechanism: a case cannot chmod, chown, utime or setxattr a task
or system file, nor read a root-only one, which Landlock (ABI 7) does not check.

The default is a uid no account has, one per daemon: CASE_UID_BASE + 16 * the daemon's pid + a
slot, so two grades side by side (each its own process) never share a user and cannot touch
each other's copies, and no lock or file is needed to pick one. `--case-user NAME|UID` pins
one. A non-root daemon cannot switch users: its cases run as itself.

Everything that runs in a case's child (`become`, `set_limits`) runs between fork and exec of
the single-threaded case supervisor: no locks, no threads.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import pwd
import resource
from pathlib import Path

from ssebench.daemon.confine.policy import CaseUser, Limits
from ssebench.daemon.confine.procfs import processes

# Above systemd's container range (up to 0x6FFFFFFF) and below 2^31: 16 slots for every pid
# up to the kernel's highest pid_max (2^22) fit under 1_967_108_864.
CASE_UID_BASE = 1_900_000_000
SLOTS = 16
_slots = itertools.count()  # each daemon of this process takes the next slot

_libc = ctypes.CDLL(None, use_errno=True)
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class CaseUserError(ValueError):
    """`--case-user` names no user cases can run as (one line, exit status 2, above)."""


def case_user(requested: str | None = None) -> CaseUser:
    """The user a new daemon's cases run as: `requested` (a name or a uid) or one of its own;
    this process's own user when it is not root (and then `requested` must be it)."""
    if requested is not None:
        user = named_user(requested)
        if os.geteuid() != 0 and user.uid != os.geteuid():
            raise CaseUserError(
                f"--case-user {requested}: only a root daemon runs cases as another user "
                f"(this one is uid {os.geteuid()})"
            )
        if user.uid == 0 and os.geteuid() == 0:
            raise CaseUserError(f"--case-user {requested}: cases never run as root")
        return user
    if os.geteuid() != 0:
        return own_user()
    uid = CASE_UID_BASE + SLOTS * os.getpid() + next(_slots) % SLOTS
    return CaseUser(uid, uid, str(uid))


def own_user() -> CaseUser:
    uid = os.geteuid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:  # a uid with no account (a task container's agent, often)
        name = str(uid)
    return CaseUser(uid, os.getegid(), name)


def named_user(requested: str) -> CaseUser:
    """`--case-user`'s value: an account's name, or a uid (with or without an account)."""
    try:
        if requested.isdigit():
            uid = int(requested)
            try:
                entry = pwd.getpwuid(uid)
            except KeyError:
                return CaseUser(uid, uid, requested)
        else:
            entry = pwd.getpwnam(requested)
    except (KeyError, OverflowError, ValueError):
        raise CaseUserError(f"--case-user {requested}: no such user") from None
    return CaseUser(entry.pw_uid, entry.pw_gid, entry.pw_name)


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def last_capability() -> int:
    return int(Path("/proc/sys/kernel/cap_last_cap").read_text())


def _prctl(*args: int) -> int:
    return int(_libc.prctl(*args, *([0] * (5 - len(args)))))


def drop_capabilities() -> None:
    """Effective, permitted and inheritable sets emptied (the ambient set goes with them)."""
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if _libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def become(user: CaseUser, last_cap: int) -> None:
    """In a case's child: no new privileges, `user`'s ids, no groups, no capabilities, nothing
    exec can give back. Every capability goes, the bounding set too, from a non-root case as
    from any: with CAP_DAC_READ_SEARCH or CAP_DAC_OVERRIDE it could read any file past its mode,
    with CAP_SYS_ADMIN another process's environ through /proc past Landlock."""
    if _prctl(PR_SET_NO_NEW_PRIVS, 1) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if os.geteuid() != 0:
        _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
        return  # a non-root daemon's cases run as itself, with what it has: nothing
    for cap in range(last_cap + 1):
        _prctl(PR_CAPBSET_DROP, cap)  # EINVAL for caps this kernel lacks
    os.setgroups([])
    os.setresgid(user.gid, user.gid, user.gid)
    os.setresuid(user.uid, user.uid, user.uid)  # a uid other than 0 loses every capability
    drop_capabilities()


def set_limits(limits: Limits, others: int) -> None:
    """The kernel's per-process limits: open files, and processes where the kernel counts them
    (per user, so the `others` the case's user already has are added). Memory, disk, and
    processes in every case, the supervisor watches itself."""
    for which, value in (
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_NPROC, limits.processes + others),
    ):
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:  # raising it needs CAP_SYS_RESOURCE, rare even
            value = min(value, hard)  # for root (Docker's root has not got it)
        resource.setrlimit(which, (value, value))


def processes_of(uid: int) -> int:
    """How many processes `uid` has now: the kernel counts them all against RLIMIT_NPROC."""
    return sum(process.uid == uid for process in processes())


PR_SET_DUMPABLE = 4


def protect_self() -> None:
    """This process (the daemon) may not be read or traced by a same-user process through /proc:
    the agent's own tools, run as the daemon's user, included."""
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
