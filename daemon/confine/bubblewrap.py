"""bubblewrap: each case gets a view of its own, built from nothing.

The case's root is an empty file system, read-only in the end; the system folders are bound in
read-only (split around every hidden path inside them, so a withheld file under /opt is simply
not there), then the granted files, the runner copy of the tree at the tree's own path (so
build caches and scripts that name it keep working), the case's folder (its report folder
bound onto itself, so it stays where the sanitizers write: reports.py), and a /tmp and /var/tmp
of its own. Nothing else of the machine is there: no /home, /run or /var, no other copy of the
task. Granted paths are bound from descriptors the supervisor opened, so a folder on the way
the case's user may not enter (a task folder locked to root) does not stand in the way, and a
path swapped later cannot redirect a bind.

Each case gets new mount, PID, network, IPC, UTS and cgroup namespaces. A root daemon starts
bubblewrap as root without a user namespace, so that the case's files belong to its user, and
util-linux's setpriv becomes that user inside, keeping no capability.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence

from ssebench.daemon.confine import seccomp
from ssebench.daemon.confine.access import Shape
from ssebench.daemon.confine.mechanism import (
    Confinement,
    Folders,
    IsolationError,
    Launch,
    Mechanism,
)
from ssebench.daemon.confine.policy import SHARED_TMP, CaseUser, Policy, inside, visible_roots

NAME = "bubblewrap"
DETAIL = "mount, PID, network and IPC namespaces, seccomp, no capabilities"


def candidate() -> Mechanism | str:
    """bubblewrap, if it is installed here (the probe then shows it works); else why not."""
    path = shutil.which("bwrap")
    if path is None:
        return "bwrap is not installed"
    return Mechanism(NAME, DETAIL, bwrap=path, setpriv=shutil.which("setpriv") or "")


class Bubblewrap(Confinement):
    name = NAME
    shape = Shape(paths=False, hide=False)  # grants are bound, not walked; nothing else is there
    binds = True
    own_network = True
    spare = "bwrap"  # it dies of SIGTERM and takes its namespace along: it is killed last

    def __init__(self, mechanism: Mechanism, user: CaseUser) -> None:
        super().__init__(mechanism, user)
        if self.user.switched and not mechanism.setpriv:
            raise IsolationError(
                "running cases as a user of their own under a root bubblewrap needs "
                "util-linux's setpriv"
            )
        self.opened: dict[str, int] = {}  # the policies' paths, opened once

    def launch(self, command: Sequence[str], policy: Policy, folders: Folders, cwd: str) -> Launch:
        launch = Launch([])
        case_dir = os.open(folders.root, os.O_PATH | os.O_CLOEXEC)
        reports = os.open(folders.reports, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
        filter_fd = seccomp.program_fd(self.deny_filter(policy.network))
        launch.owned += [case_dir, reports, filter_fd]
        argv = [self.mechanism.bwrap, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        if self.user.switched:
            # setpriv needs these to become the user and empty the bounding set, and bubblewrap
            # the last to enter the case's folders (its user's, 0700); setpriv drops them all.
            for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_DAC_READ_SEARCH"):
                argv += ["--cap-add", cap]
            argv += ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
            argv += [] if policy.network else ["--unshare-net"]
        else:
            argv += ["--unshare-all"] + (["--share-net"] if policy.network else [])
        argv += list(self._mounts(policy, folders, launch.owned))
        argv += ["--bind-fd", str(case_dir), folders.root]
        # The report folder bound onto itself: a mount point, which the case (its folder's
        # owner) can neither rename nor remove to slip a folder of its own in its place.
        argv += ["--bind-fd", str(reports), folders.reports]
        argv += ["--remount-ro", "/", "--seccomp", str(filter_fd), "--chdir", cwd, "--"]
        launch.argv = argv + self._become() + list(command)
        launch.pass_fds = tuple(launch.owned)
        launch.preexec = self.brokered(launch, policy)
        return launch

    def _fd(self, path: str) -> int | None:
        if path not in self.opened:
            try:
                self.opened[path] = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                return None  # gone since the task was loaded: the case will say what is missing
        return self.opened[path]

    def _mounts(self, policy: Policy, folders: Folders, extra: list[int]) -> Iterator[str]:
        hidden = policy.hidden
        roots = [root for path in policy.system for root in visible_roots(hidden, path)]
        bound = [*(g.path for g in policy.readable), *(g.real for g in policy.readable)]
        bound += [g.path for g in policy.writable] + [folders.root]
        # What lies under /tmp is bound once the case's own /tmp is there.
        under = [root for root in roots if inside(root, SHARED_TMP)]
        roots = [root for root in roots if root not in under]
        yield from self._folders(roots, [])
        yield from self._system(roots)
        yield from ("--proc", "/proc", "--dev", "/dev")
        yield from self._folders(list(SHARED_TMP), roots)
        for path in SHARED_TMP:  # first: what is bound below them comes after
            yield from ("--bind", folders.shared(path), path)
        yield from self._folders([*under, *bound], roots)
        yield from self._system(under)
        # Each bind gets a copy of the path's descriptor, which bubblewrap closes once bound:
        # only those are passed, so none reaches the case.
        binds = [("--ro-bind-fd", g.real, where) for g in policy.readable
                 for where in dict.fromkeys([g.path, g.real])]  # fmt: skip
        binds += [("--bind-fd", g.real, g.path) for g in policy.writable]
        for option, real, where in binds:
            fd = self._fd(real)
            if fd is not None:
                fd = os.dup(fd)
                extra.append(fd)
                yield from (option, str(fd), where)

    @staticmethod
    def _system(roots: list[str]) -> Iterator[str]:
        for root in roots:
            if os.path.islink(root):
                yield from ("--symlink", os.readlink(root), root)
            else:
                yield from ("--ro-bind", root, root)

    @staticmethod
    def _folders(targets: list[str], roots: list[str]) -> Iterator[str]:
        """The folders on the way to every bound path that no bound root gives, made enterable
        (bubblewrap makes them 0700, its own user's: a case's user could not pass them)."""
        made: set[str] = set()
        for target in targets:
            ancestors = []
            folder = os.path.dirname(target)
            while folder != "/" and folder not in made:
                if not inside(folder, roots):
                    ancestors.append(folder)
                made.add(folder)
                folder = os.path.dirname(folder)
            for path in reversed(ancestors):
                yield from ("--perms", "0755", "--dir", path)

    def _become(self) -> list[str]:
        if not self.user.switched:
            return []
        ids = ["--reuid", str(self.user.uid), "--regid", str(self.user.gid)]
        drop = ["--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]
        return [self.mechanism.setpriv, *ids, *drop, "--"]

    def close(self) -> None:
        for fd in self.opened.values():
            os.close(fd)
        self.opened.clear()
