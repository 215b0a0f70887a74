"""What one case may reach (its policy) and who it runs as: plain records, the same whichever
mechanism enforces them.

The daemon makes a policy for each check (a case reads the top-level files and its own check's
files, never another check's) and hands it to the case supervisor with the command; every
mechanism reads the same record. Nothing here touches the machine but `system_paths`, which
looks which system folders exist.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

# What every case may read of the system (DESIGN.md's table), where it exists; /proc and /dev
# each mechanism gives in its own way. The CPU and cgroup folders of /sys tell a toolchain how
# many CPUs and how much memory it has, and nothing about other processes.
SYSTEM = (
    *("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"),
    *("/sys/devices/system/cpu", "/sys/fs/cgroup"),
)
# Programs write these whatever TMPDIR says (glibc's tmpfile() does): every case gets them
# writable, fresh under bubblewrap, the machine's own under Landlock (its leftovers removed).
SHARED_TMP = ("/tmp", "/var/tmp")


@dataclass(frozen=True)
class Grant:
    """A file or folder a case reaches: `path` as the case names it (through symbolic links, as
    `$SSE_TASK_DIR/intent` may be; for a bound tree, the tree's own path), `real` the file or
    folder itself."""

    path: str
    real: str


@dataclass(frozen=True)
class Limits:
    """What one case may use (task.toml `limits`): more fails the case, never the server.
    `tree_mb` bounds the agent's tree the case runs on (the daemon's, not the supervisor's)."""

    processes: int = 4096
    memory_mb: int = 16384
    open_files: int = 65536
    disk_mb: int = 20480
    tree_mb: int = 8192


@dataclass(frozen=True)
class CaseUser:
    """Who cases run as: a user of their own that owns nothing but the case's copy and
    folders (daemon/confine/user.py), or the daemon's own user when it is not root."""

    uid: int
    gid: int
    name: str  # what USER and LOGNAME say

    @property
    def switched(self) -> bool:
        """Whether cases run as another user than this process (a root daemon's)."""
        return self.uid != os.geteuid()


@dataclass(frozen=True)
class Policy:
    """What the cases of one check may reach. Paths are absolute.

    `system` the system folders (read-only, as an ordinary user reads them); `readable` the
    task files the check reads (the top-level ones and its own) and the task's `readable`
    paths; `writable` the runner copy of the tree (and the task's `writable` folders), each
    where the case sees it; `hidden` what no case may reach by any path, even inside a granted
    or system folder (the task folder, the other checks' files wherever they lie, ssebench's own
    folders, the saved logs), though a grant inside a hidden folder is still reachable;
    `withheld` the task's own among them, which the case user's permissions must keep it
    from even looking at where its mechanism does not (access.py), but for what lies in them
    and is no secret (`public`: the agent's own tree, when it lies in the task folder);
    `moved_away` the withheld files outside the task folder, which a case supervisor whose
    mechanism leaves them to permissions (Landlock: a `stat` needs none) moves out of sight
    while the check's cases run (stash.py).
    """

    system: tuple[str, ...] = ()
    readable: tuple[Grant, ...] = ()
    writable: tuple[Grant, ...] = ()
    hidden: tuple[str, ...] = ()
    withheld: tuple[str, ...] = ()
    public: tuple[str, ...] = ()
    moved_away: tuple[str, ...] = ()
    network: bool = False
    limits: Limits = field(default_factory=Limits)

    def roots(self) -> tuple[str, ...]:
        """Every path a case reads from, as it names them (hidden paths inside them aside)."""
        named = (path for grant in (*self.readable, *self.writable) for path in (grant.path,))
        return tuple(dict.fromkeys([*self.system, *SHARED_TMP, *named]))


def system_paths(*, network: bool = False) -> tuple[str, ...]:
    """The system folders a case reads here; with the network, the resolver's configuration
    wherever /etc/resolv.conf points (systemd keeps it under /run)."""
    paths = [path for path in SYSTEM if os.path.lexists(path)]
    if network and os.path.exists("/etc/resolv.conf"):
        paths.append(os.path.realpath("/etc/resolv.conf"))
    return tuple(dict.fromkeys(paths))


def inside(path: str, folders: tuple[str, ...] | list[str]) -> bool:
    """Whether `path` is one of `folders` or lies in one, by name."""
    return any(path == top or path.startswith(top.rstrip("/") + "/") for top in folders)


def visible_roots(hidden: tuple[str, ...], root: str = "/") -> Iterator[str]:
    """The paths that cover everything under `root` except the hidden ones.

    Landlock grants access to whole hierarchies and bubblewrap binds whole folders: neither can
    carve a hole in one, so a folder that holds a hidden path is split into its entries, along
    the hidden paths only. The hidden paths then simply are not there for a case.
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
