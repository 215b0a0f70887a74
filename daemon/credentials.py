"""Who a case runs as, and the kernel's limits on it: the owner of the source tree, with no
capabilities and no supplementary groups.

A root daemon runs cases as the tree's owner (the agent's user in a task container), so that
what a build writes belongs to the agent and a tree owned by uid 1000 can be written at all
without capabilities; a non-root daemon runs them as itself. Everything here runs in a
case's child before exec, or in a short-lived child of the supervisor: no locks, no threads.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import resource
from dataclasses import dataclass
from pathlib import Path

from ssebench.daemon.procfs import processes

_libc = ctypes.CDLL(None, use_errno=True)
PR_CAPBSET_DROP = 24
PR_SET_KEEPCAPS = 8
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE = 47, 2
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


@dataclass(frozen=True)
class CaseUser:
    """The user and group a case runs as. `reach` is the one capability it keeps, ambient,
    when its granted files lie behind folders its user cannot enter (a task folder locked to
    root): CAP_DAC_READ_SEARCH where this process has it, else CAP_DAC_OVERRIDE (Docker's
    root has only that one); Landlock still decides which paths it reads and writes."""

    uid: int
    gid: int
    reach: int | None = None


@dataclass(frozen=True)
class Limits:
    """What one case may use (task.toml `limits`): more fails the case, never the server."""

    processes: int = 4096
    memory_mb: int = 16384
    open_files: int = 65536


def case_user(source: Path) -> CaseUser:
    """The owner of `source` when this process is root, else this process's own user."""
    try:
        info = os.stat(source)
    except OSError:  # gone: its cases cannot start, and will say so
        info = None
    if os.geteuid() != 0 or info is None:
        return CaseUser(os.geteuid(), os.getegid())
    try:
        gid = pwd.getpwuid(info.st_uid).pw_gid
    except KeyError:  # a uid with no passwd entry (a task container's agent, often)
        gid = info.st_gid
    return CaseUser(info.st_uid, gid)


def log_owner(source: Path) -> tuple[int, int] | None:
    """Whose the saved long logs of this tree's cases are: the case user's, when this process
    is root (so the agent can open the file the report names); else they are simply ours."""
    if os.geteuid() != 0:
        return None
    user = case_user(source)
    return user.uid, user.gid


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


def _set_capabilities(keep: int | None) -> None:
    """Effective, permitted and inheritable: only `keep` (a capability number), or none."""
    bits = 0 if keep is None else 1 << keep
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)(_CapData(bits, bits, bits))
    if _libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def reach_capability() -> int | None:
    """The weakest capability this process has that lets a case past folders its user cannot
    enter: CAP_DAC_READ_SEARCH, else CAP_DAC_OVERRIDE; None with neither."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapPrm:"):
            permitted = int(line.split()[1], 16)
            for cap in (CAP_DAC_READ_SEARCH, CAP_DAC_OVERRIDE):
                if permitted & (1 << cap):
                    return cap
    return None


def become(user: CaseUser, last_cap: int) -> None:
    """In a case's child: no new privileges, `user`'s ids, no groups, no capabilities (but
    `user.reach`, ambient, when set); nothing exec can give back.

    Every capability goes, the bounding set too, from a root case as well: with
    CAP_SYS_ADMIN or CAP_PERFMON it could read another process's environ through /proc past
    Landlock (kernel 6.13+), and with CAP_DAC_OVERRIDE any file past its mode.
    """
    if _prctl(PR_SET_NO_NEW_PRIVS, 1) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if os.geteuid() != 0:
        return  # a non-root daemon's cases run as itself, with what it has: nothing
    keep = user.reach
    for cap in range(last_cap + 1):
        if cap != keep:
            _prctl(PR_CAPBSET_DROP, cap)  # EINVAL for caps this kernel lacks
    if keep is not None:
        _prctl(PR_SET_KEEPCAPS, 1)
    os.setgroups([])
    os.setresgid(user.gid, user.gid, user.gid)
    os.setresuid(user.uid, user.uid, user.uid)
    _set_capabilities(keep)
    if keep is not None and _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, keep) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAP_AMBIENT_RAISE)")


def set_limits(limits: Limits, others: int) -> None:
    """The kernel's per-process limits: open files, and processes where the kernel counts them
    (per user, so the `others` the case's user already has are added; never for root). Memory,
    and processes in every case, the supervisor watches itself."""
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


def cannot_reach(user: CaseUser, paths: list[str]) -> list[str]:
    """The paths `user`, without capabilities, cannot read (or enter, for a folder), checked
    by a child that becomes `user`: ACLs and every folder on the way count."""
    if not paths or os.geteuid() != 0:
        return []
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's exit is what is tested
        try:
            os.close(read)
            os.setgroups([])
            os.setresgid(user.gid, user.gid, user.gid)
            os.setresuid(user.uid, user.uid, user.uid)
            _set_capabilities(None)
            mode = os.R_OK | os.X_OK
            denied = [p for p in paths if not os.access(p, mode if os.path.isdir(p) else os.R_OK)]
            os.write(write, "\0".join(denied).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        text = answer.read().decode()
    os.waitpid(pid, 0)
    return text.split("\0") if text else []
