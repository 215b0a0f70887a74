"""Isolation: what a case may reach (the policy), and choosing the mechanism that enforces it.

The promise (DESIGN.md, "Isolation"): code the agent wrote learns nothing the level withholds
and cannot change how a later case or the grading turns out. The rule is default-deny: a case
reads the system folders, the task files its level grants and the task's `readable` paths;
reads and writes the source tree and its own TMPDIR and HOME; and nothing else, whatever else
lies on the machine. It runs as the tree's owner without capabilities, reaches no socket
outside itself (unless the task sets `network`), and keeps no state for a later case.

Two mechanisms give that: bubblewrap (namespaces: where user namespaces are allowed, i.e. on
hosts) and Landlock ABI 6+ (in Docker's default seccomp profile too), each with the same
seccomp filter (daemon/seccomp.py). A mechanism is named only once a real probe case ran
under it here. This module is imported by the case supervisor: keep it light (no pydantic).
"""

from __future__ import annotations

import ctypes
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field

from ssebench.daemon.credentials import CaseUser, Limits

BUBBLEWRAP = "bubblewrap"
LANDLOCK = "landlock"
NONE = "none"
MECHANISMS = (BUBBLEWRAP, LANDLOCK)
MIN_LANDLOCK_ABI = 6  # scoped signals; files since 1, TCP since 4
# What every case may read of the system (DESIGN.md's table), where it exists; /proc and
# /dev each mechanism gives in its own way. The CPU and cgroup folders of /sys tell a
# toolchain how many CPUs and how much memory it has, and nothing about other processes.
SYSTEM = (
    *("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"),
    *("/sys/devices/system/cpu", "/sys/fs/cgroup"),
)
INSTALL_HINT = (
    "no isolation mechanism works here: install bubblewrap (Debian: apt-get install bubblewrap) "
    "where user namespaces are allowed, or run on Linux 6.12 or newer with Landlock enabled "
    "(ABI 6); or pass --no-isolation to run the agent's code unconfined"
)


class IsolationError(Exception):
    """The requested mechanism cannot work on this machine."""


@dataclass(frozen=True)
class Grant:
    """A file or folder a case may read: `path` as cases name it (through symbolic links, as
    `$SSE_TASK_DIR/intent` may be), `real` the file or folder itself."""

    path: str
    real: str


@dataclass(frozen=True)
class Policy:
    """What every case of one daemon may reach; the same whichever mechanism enforces it.

    Paths are absolute. `system` the system folders (read-only); `readable` the task files
    the level grants and the task's own `readable` paths; `writable` the source tree (each
    case's own folder comes with the case); `hidden` what no case may read by any path, even
    inside a granted folder (the task folder, ssebench's own folders, the saved logs), though
    a grant inside a hidden folder is still readable. `user` is who cases run as (None: as
    the daemon itself).
    """

    system: tuple[str, ...] = ()
    readable: tuple[Grant, ...] = ()
    writable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    network: bool = False
    user: CaseUser | None = None
    limits: Limits = field(default_factory=Limits)

    def roots(self) -> tuple[str, ...]:
        """Every folder or file a case reads from (hidden paths inside them aside)."""
        grants = (path for grant in self.readable for path in (grant.path, grant.real))
        return tuple(dict.fromkeys([*self.system, *grants, *self.writable]))


def system_paths(*, network: bool = False) -> tuple[str, ...]:
    """The system folders a case reads here; with the network, the resolver's configuration
    wherever /etc/resolv.conf points (systemd keeps it under /run)."""
    paths = [path for path in SYSTEM if os.path.lexists(path)]
    if network and os.path.exists("/etc/resolv.conf"):
        paths.append(os.path.realpath("/etc/resolv.conf"))
    return tuple(dict.fromkeys(paths))


@dataclass(frozen=True)
class Mechanism:
    """How cases are confined here; chosen once, at start, and named on stderr."""

    name: str
    detail: str = ""
    bwrap: str = ""  # the bubblewrap executable
    setpriv: str = ""  # util-linux's setpriv: how a root bubblewrap becomes the case's user
    landlock_abi: int = 0

    @property
    def description(self) -> str:
        return f"{self.name} ({self.detail})" if self.detail else self.name


def choose(requested: str = "auto", user: CaseUser | None = None) -> Mechanism:
    """The strongest mechanism that ran a probe case here as `user` ('auto'), or the one asked
    for; IsolationError saying why when none (or not that one) can."""
    if requested == NONE:
        return Mechanism(NONE, "cases run unconfined")
    if requested not in ("auto", *MECHANISMS):
        raise IsolationError(f"unknown isolation mechanism {requested!r}")
    from ssebench.daemon.probe import probe  # the probe runs a case: it needs the launcher

    for name in MECHANISMS if requested == "auto" else (requested,):
        found = _candidate(name)
        if isinstance(found, Mechanism):
            failure = probe(found, user)
            if failure is None:
                return found
            found = f"a probe case failed: {failure}"
        if requested != "auto":
            what = "bubblewrap" if name == BUBBLEWRAP else "Landlock"
            raise IsolationError(f"{what} cannot isolate cases here: {found}")
    raise IsolationError(INSTALL_HINT)


def available(user: CaseUser | None = None) -> list[str]:
    """The mechanisms that work on this machine, strongest first."""
    found = []
    for name in MECHANISMS:
        try:
            choose(name, user)
        except IsolationError:
            continue
        found.append(name)
    return found


def _candidate(name: str) -> Mechanism | str:
    """The mechanism, if what it needs is here (the probe then shows it works); else why not."""
    if name == BUBBLEWRAP:
        path = shutil.which("bwrap")
        if path is None:
            return "bwrap is not installed"
        detail = "mount, PID, network and IPC namespaces, seccomp, no capabilities"
        return Mechanism(BUBBLEWRAP, detail, bwrap=path, setpriv=shutil.which("setpriv") or "")
    abi = landlock_abi()
    if abi < MIN_LANDLOCK_ABI:
        have = f"ABI {abi}" if abi else "none"
        return f"ABI {MIN_LANDLOCK_ABI} or newer is needed ({have})"
    detail = f"ABI {abi}: files, processes, signals and TCP confined, seccomp, no capabilities"
    return Mechanism(LANDLOCK, detail, landlock_abi=abi)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    try:
        import py_landlock

        return int(py_landlock.get_abi_version())
    except Exception:
        return 0


def visible_roots(hidden: tuple[str, ...], root: str = "/") -> Iterator[str]:
    """The paths that cover everything under `root` except the hidden ones.

    Landlock grants access to whole hierarchies and cannot carve a hole in one, so a folder
    that holds a hidden path is split into its entries, along the hidden paths only.
    """
    if root in hidden:
        return
    if not any(path.startswith(root.rstrip("/") + "/") for path in hidden):
        yield root
        return
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return
    for entry in entries:
        path = os.path.join(root, entry)
        if not os.path.islink(path):  # a link's target is covered where it lies
            yield from visible_roots(hidden, path)


PR_SET_DUMPABLE = 4


def protect_self() -> None:
    """This process (the daemon) may not be read or traced by a same-user process through /proc:
    the agent's own tools, run as the daemon's user, included."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
