"""bubblewrap: the view one case gets, built from nothing.

The case's root is an empty file system, read-only in the end; the system folders are bound
in read-only, the hidden paths inside them covered by empty ones, then the granted files,
the source tree and the case's folder put back, each at the path cases name it by (and, for
a granted symbolic link, also where it points). Nothing else of the machine is there: no
/tmp, /home, /run or /var, no other copy of the task. Granted paths are bound from file
descriptors the supervisor opened, so a folder the case's user may not enter (a task folder
locked to root) does not stand in the way, and a path swapped later cannot redirect a bind.

Each case gets new mount, PID, network, IPC, UTS and cgroup namespaces. A root daemon whose
case runs as another user (the tree's owner) starts bubblewrap as root without a user
namespace, so that the case's files belong to that user, and util-linux's setpriv becomes
the user inside, keeping no capability.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from ssebench.daemon.isolation import Mechanism, Policy


def _inside(path: str, folders: tuple[str, ...] | list[str]) -> bool:
    return any(path == top or path.startswith(f"{top}/") for top in folders)


@dataclass
class View:
    """The policy's paths, opened once; `argv` gives each case its bubblewrap command line."""

    mechanism: Mechanism
    policy: Policy
    opened: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        reals = [grant.real for grant in self.policy.readable]
        for path in dict.fromkeys([*reals, *self.policy.writable]):
            try:
                self.opened[path] = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # gone since the task was loaded: the case will say what is missing

    @property
    def switches_user(self) -> bool:
        """A root daemon running cases as another user (see the module's docstring)."""
        user = self.policy.user
        return os.geteuid() == 0 and user is not None and user.uid != 0

    def fds(self) -> list[int]:
        return list(self.opened.values())

    def argv(
        self, command: list[str], case_dir: int, cwd: str, seccomp: int, extra: list[int]
    ) -> list[str]:
        """bubblewrap's arguments for one case whose folder is open as `case_dir`; descriptors
        opened for this case alone are added to `extra` (bubblewrap closes each descriptor it
        binds, so a path bound twice needs a second one)."""
        case_path = os.readlink(f"/proc/self/fd/{case_dir}")
        argv = [self.mechanism.bwrap, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        if self.switches_user:
            # setpriv needs these to become the user and empty the bounding set; it drops them.
            for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"):
                argv += ["--cap-add", cap]
            argv += ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
            argv += [] if self.policy.network else ["--unshare-net"]
        else:
            argv += ["--unshare-all"] + (["--share-net"] if self.policy.network else [])
        argv += list(self._mounts(extra, case_path))
        argv += ["--bind-fd", str(case_dir), case_path]
        argv += ["--remount-ro", "/", "--seccomp", str(seccomp), "--chdir", cwd, "--"]
        return argv + self._become() + command

    def _mounts(self, extra: list[int], case_path: str) -> Iterator[str]:
        system = self.policy.system
        for path in system:
            if os.path.islink(path):
                yield from ("--symlink", os.readlink(path), path)
            else:
                yield from ("--ro-bind", path, path)
        yield from ("--proc", "/proc", "--dev", "/dev")
        covered: list[str] = []
        for path in sorted(self.policy.hidden, key=len):
            if _inside(path, system) and not _inside(path, covered) and os.path.isdir(path):
                covered.append(path)
                yield from ("--tmpfs", path)
        yield from self._folders(covered, case_path)
        for grant in self.policy.readable:
            fd = self.opened.get(grant.real)
            if fd is not None:
                for where in dict.fromkeys([grant.path, grant.real]):
                    if where != grant.path:
                        fd = os.dup(fd)
                        extra.append(fd)
                    yield from ("--ro-bind-fd", str(fd), where)
        for path in self.policy.writable:
            if path in self.opened:
                yield from ("--bind-fd", str(self.opened[path]), path)

    def _folders(self, covered: list[str], case_path: str) -> Iterator[str]:
        """The folders on the way to every bound path, made enterable (bubblewrap makes them
        0700, its own user's: a case running as another user could not pass them)."""
        targets = [p for grant in self.policy.readable for p in (grant.path, grant.real)]
        made: set[str] = set()
        for target in [*targets, *self.policy.writable, case_path]:
            folder = os.path.dirname(target)
            ancestors = []
            while folder != "/" and folder not in made:
                exists = _inside(folder, self.policy.system) and not _inside(folder, covered)
                if not exists or folder in covered:
                    ancestors.append(folder)
                folder = os.path.dirname(folder)
            for path in reversed(ancestors):
                if path not in covered:
                    yield from ("--perms", "0755", "--dir", path)
                made.add(path)

    def _become(self) -> list[str]:
        user = self.policy.user
        if not self.switches_user or user is None:
            return []
        ids = ["--reuid", str(user.uid), "--regid", str(user.gid)]
        drop = ["--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]
        return [self.mechanism.setpriv, *ids, *drop, "--"]

    def close(self) -> None:
        for fd in self.opened.values():
            os.close(fd)
        self.opened.clear()
