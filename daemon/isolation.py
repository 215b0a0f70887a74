"""Isolation: what a case may reach (the policy) and the mechanism that enforces it.

The promise (DESIGN.md, "Isolation"): code the agent wrote learns nothing the level withholds
and cannot change how a later case or the grading turns out. A case may read the system, read
and write the source tree and its own TMPDIR and HOME, and read the task files the level allows;
it may not read the task folder, the daemon's spool, the saved logs or the shared temporary
folders, write anywhere else, see, trace or signal a process outside the case, or reach TCP.

Two mechanisms give that: bubblewrap (namespaces: the strongest, where user namespaces are
allowed, i.e. on hosts) and Landlock ABI 6+ (in Docker's default seccomp profile too). This
module is imported by the case supervisor, a small separate process: keep it light (no pydantic).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BUBBLEWRAP = "bubblewrap"
LANDLOCK = "landlock"
NONE = "none"
MECHANISMS = (BUBBLEWRAP, LANDLOCK)
MIN_LANDLOCK_ABI = 6  # scoped signals; files since 1, TCP since 4
INSTALL_HINT = (
    "no isolation mechanism works here: install bubblewrap (Debian: apt-get install bubblewrap) "
    "where user namespaces are allowed, or run on Linux 6.12 or newer with Landlock enabled "
    "(ABI 6); or pass --no-isolation to run the agent's code unconfined"
)


class IsolationError(Exception):
    """The requested mechanism cannot work on this machine."""


@dataclass(frozen=True)
class Policy:
    """What every case of one daemon may reach; the same whichever mechanism enforces it.

    Paths are absolute and resolved. `readable` are the task files the level lets cases read;
    `writable` the source tree and the folder that holds each case's TMPDIR and HOME; `hidden`
    what no case may read by any path (the task folder, the spool, the saved logs, the shared
    temporary folders). A readable or writable path inside a hidden one is still reachable.
    """

    readable: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    network: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Policy:
        return cls(
            readable=tuple(data["readable"]),
            writable=tuple(data["writable"]),
            hidden=tuple(data["hidden"]),
            network=bool(data["network"]),
        )


@dataclass(frozen=True)
class Mechanism:
    """How cases are confined here; chosen once, at start, and named on stderr."""

    name: str
    detail: str = ""
    bwrap: str = ""  # the bubblewrap executable
    landlock_abi: int = 0
    uid: int = field(default_factory=os.geteuid)

    @property
    def description(self) -> str:
        return f"{self.name} ({self.detail})" if self.detail else self.name


def choose(requested: str = "auto") -> Mechanism:
    """The strongest mechanism this machine allows ('auto'), or the one asked for."""
    if requested == NONE:
        return Mechanism(NONE, "cases run unconfined")
    if requested in ("auto", BUBBLEWRAP):
        found = _bubblewrap()
        if isinstance(found, Mechanism):
            return found
        if requested == BUBBLEWRAP:
            raise IsolationError(f"bubblewrap cannot isolate cases here: {found}")
    if requested in ("auto", LANDLOCK):
        abi = landlock_abi()
        if abi >= MIN_LANDLOCK_ABI:
            detail = f"ABI {abi}: files, processes, signals and TCP confined, no capabilities"
            return Mechanism(LANDLOCK, detail, landlock_abi=abi)
        if requested == LANDLOCK:
            have = f"ABI {abi}" if abi else "none"
            raise IsolationError(f"Landlock ABI {MIN_LANDLOCK_ABI} or newer is needed ({have})")
    if requested not in ("auto", *MECHANISMS):
        raise IsolationError(f"unknown isolation mechanism {requested!r}")
    raise IsolationError(INSTALL_HINT)


def available() -> list[str]:
    """The mechanisms that work on this machine, strongest first."""
    found = []
    for name in MECHANISMS:
        try:
            choose(name)
        except IsolationError:
            continue
        found.append(name)
    return found


def _bubblewrap() -> Mechanism | str:
    """bubblewrap when it can make the namespaces a case needs here; else why not."""
    path = shutil.which("bwrap")
    if path is None:
        return "bwrap is not installed"
    probe = [path, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap does not run: {exc}"
    if done.returncode != 0:
        return " ".join(done.stderr.split()) or f"bwrap exited {done.returncode}"
    version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout.split()
    detail = "mount, PID, network and IPC namespaces, no capabilities"
    return Mechanism(BUBBLEWRAP, f"{' '.join(version[-1:])}: {detail}".lstrip(": "), bwrap=path)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    try:
        import py_landlock

        return int(py_landlock.get_abi_version())
    except Exception:
        return 0


# --- Landlock ------------------------------------------------------------------------------


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


def landlock_ruleset(policy: Policy, abi: int) -> int:
    """A Landlock ruleset fd for `policy`, made once; each case's child restricts itself with it.

    Read and execute everywhere but the hidden paths; read the task files the level allows;
    read and write the source tree and the case folders, and the devices; no TCP (unless the
    task opts in); no signal or abstract socket out of the domain.
    """
    import py_landlock as ll
    from py_landlock.abi import get_supported_fs, get_supported_net, get_supported_scope

    every = get_supported_fs(ll.ABIVersion(abi))
    read = ll.AccessFs.READ_FILE | ll.AccessFs.READ_DIR | ll.AccessFs.EXECUTE
    attr = ll.RulesetAttr(
        handled_access_fs=every,
        handled_access_net=0 if policy.network else get_supported_net(ll.ABIVersion(abi)),
        scoped=get_supported_scope(ll.ABIVersion(abi)),
    )
    ruleset = ll.create_ruleset(attr)
    rules = [(path, read) for path in visible_roots(policy.hidden)]
    rules += [(path, read) for path in policy.readable]
    rules += [(path, every) for path in policy.writable]
    rules += [(path, every) for path in ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")]
    # A rule on a file may only hold the rights that make sense for a file.
    on_file = ll.AccessFs.EXECUTE | ll.AccessFs.READ_FILE | ll.AccessFs.WRITE_FILE
    on_file |= ll.AccessFs.TRUNCATE | ll.AccessFs.IOCTL_DEV
    for path, access in rules:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue  # gone since it was listed, or never there (/dev/tty without a terminal)
        try:
            allowed = (access if os.path.isdir(path) else access & on_file) & every
            ll.add_rule(ruleset, ll.PathBeneathAttr(allowed_access=allowed, parent_fd=fd))
        except ll.RulesetError:
            pass  # not a file Landlock can hold a rule for (a socket's pseudo file): unreachable
        finally:
            os.close(fd)
    return int(ruleset)


_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


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


def confine_self(ruleset: int, last_cap: int) -> None:
    """In a case's child, before exec: no new privileges, no capabilities, the Landlock domain.

    A root case with CAP_SYS_ADMIN or CAP_PERFMON could still read another process's environ
    through /proc past Landlock (kernel 6.13+), so every capability goes, bounding set included,
    so that exec gives none back.
    """
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if os.geteuid() == 0:
        for cap in range(last_cap + 1):
            _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL for caps this kernel lacks
        header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
        data = (_CapData * 2)()
        if _libc.capset(ctypes.byref(header), data) != 0:
            raise OSError(ctypes.get_errno(), "capset")
    if ruleset >= 0:
        import py_landlock as ll

        ll.restrict_self(ll.RulesetFd(ruleset), ll.RestrictSelfFlag(0))


# --- bubblewrap ----------------------------------------------------------------------------


def bwrap_argv(mechanism: Mechanism, policy: Policy, case_dir: str, cwd: str) -> list[str]:
    """bubblewrap's arguments for one case: the system read-only, hidden paths under empty
    tmpfs mounts, then the allowed paths bound back in, and every namespace new."""
    argv = [mechanism.bwrap, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    argv += ["--unshare-all"] + (["--share-net"] if policy.network else [])
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    hidden: list[str] = []
    for path in sorted(policy.hidden, key=len):
        if os.path.isdir(path) and not any(path.startswith(f"{top}/") for top in hidden):
            hidden.append(path)
            argv += ["--tmpfs", path]
    for path in policy.readable:
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    for path in (*policy.writable, case_dir):
        argv += ["--bind", path, path]
    return [*argv, "--chdir", cwd, "--"]


PR_SET_DUMPABLE = 4


def protect_self() -> None:
    """This process (the daemon) may not be read or traced by a same-user process through /proc:
    the agent's own tools, run as the daemon's user, included."""
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
