"""Landlock: the domain each case gets, made from its check's policy and its own folder.

Where namespaces are not allowed (a Docker container with the default seccomp profile, how
task containers run), Landlock confines a case to reading exactly the policy's paths (system
folders split around every hidden path, the grants) and writing only the runner copy, the
folders in its own folder, and /tmp and /var/tmp (the machine's own: the case user's leftovers
are removed when it ends), its report folder only by making files and writing them
(reports.py); no TCP connect or bind, no signal, ptrace or /proc access out of the domain, no
abstract Unix socket out of it. The policy's paths are opened once (O_PATH), so a path
swapped for a symbolic link later cannot redirect a rule; each case gets a ruleset of its own.

Landlock (ABI 7) checks neither metadata changes (chmod, chown, utime, setxattr) nor stat or
lookup: the case's own user, who owns nothing, stands behind it there (user.py, access.py).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Sequence

from ssebench.daemon.confine import seccomp
from ssebench.daemon.confine.access import Shape
from ssebench.daemon.confine.mechanism import Confinement, Folders, Launch, Mechanism
from ssebench.daemon.confine.policy import SHARED_TMP, CaseUser, Policy, inside, visible_roots
from ssebench.daemon.confine.user import become, last_capability

NAME = "landlock"
MIN_ABI = 6  # scoped signals; files since 1, TCP since 4
# Pathname Unix sockets are checked from ABI 9 (LANDLOCK_ACCESS_FS_RESOLVE_UNIX): handled and
# granted nowhere, only the broker (broker.py) connects a case to a socket.
RESOLVE_UNIX_ABI = 9
RESOLVE_UNIX = 1 << 16
READ_DEVICES = ("/dev/random", "/dev/urandom")
WRITE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    try:
        import py_landlock

        return int(py_landlock.get_abi_version())
    except Exception:
        return 0


def candidate() -> Mechanism | str:
    """Landlock, if this kernel has it (the probe then shows it works); else why not."""
    abi = abi_version()
    if abi < MIN_ABI:
        have = f"ABI {abi}" if abi else "none"
        return f"ABI {MIN_ABI} or newer is needed ({have})"
    detail = f"ABI {abi}: files, processes, signals and TCP confined, seccomp, no capabilities"
    return Mechanism(NAME, detail, landlock_abi=abi)


def handled(abi: int) -> int:
    """Every file-system right this kernel's Landlock knows."""
    import py_landlock as ll
    from py_landlock.abi import get_supported_fs

    every = int(get_supported_fs(ll.ABIVersion(abi)))
    return every | (RESOLVE_UNIX if abi >= RESOLVE_UNIX_ABI else 0)


def _rights() -> tuple[int, int]:
    """Read (and execute), and what a rule on a file (not a folder) may hold."""
    import py_landlock as ll

    read = ll.AccessFs.READ_FILE | ll.AccessFs.READ_DIR | ll.AccessFs.EXECUTE
    on_file = read | ll.AccessFs.WRITE_FILE | ll.AccessFs.TRUNCATE | ll.AccessFs.IOCTL_DEV
    return int(read), int(on_file & ~ll.AccessFs.READ_DIR)


class Landlock(Confinement):
    name = NAME
    shape = Shape(paths=True, hide=True)
    spare = ""

    def __init__(self, mechanism: Mechanism, user: CaseUser) -> None:
        super().__init__(mechanism, user)
        self.abi = mechanism.landlock_abi
        self.every = handled(self.abi)
        self.read, self.on_file = _rights()
        self.write = self.every & ~RESOLVE_UNIX
        self.last_cap = last_capability()
        self.opened: dict[str, int] = {}  # every policy's paths, opened once
        self.rules: dict[Policy, list[tuple[int, int]]] = {}

    @property
    def unix_checked(self) -> bool:
        return self.brokers or self.abi >= RESOLVE_UNIX_ABI

    @property
    def shared_tmp(self) -> tuple[str, ...]:
        """The machine's /tmp and /var/tmp, for a case user of its own, whose permissions keep
        it from other users' files there; a non-root daemon's cases, run as itself, would
        reach every file of its own (its spools too): they keep to their TMPDIR."""
        return SHARED_TMP if self.user.switched else ()

    def _rules(self, policy: Policy) -> list[tuple[int, int]]:
        """(descriptor, rights) of the policy's paths."""
        if policy not in self.rules:
            hidden = policy.hidden
            roots = (*policy.system, "/proc")
            reads = [root for path in roots for root in visible_roots(hidden, path)]
            for grant in policy.readable:
                in_hidden = inside(grant.real, hidden)
                reads += [grant.real] if in_hidden else list(visible_roots(hidden, grant.real))
            wanted = [(path, self.read) for path in reads]
            wanted += [(path, self.read | self.write) for path in WRITE_DEVICES]
            wanted += [(path, self.read) for path in READ_DEVICES]
            wanted += [(g.real, self.write) for g in policy.writable]
            wanted += [(path, self.write) for path in self.shared_tmp]
            self.rules[policy] = list(self._open(wanted))
        return self.rules[policy]

    def _open(self, wanted: Iterable[tuple[str, int]]) -> Iterable[tuple[int, int]]:
        for path, access in wanted:
            if path not in self.opened:
                try:
                    self.opened[path] = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue  # gone, or never there (/dev/tty without a terminal, /lib32)
            fd = self.opened[path]
            is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
            yield fd, (access if is_dir else access & self.on_file) & self.every

    def ruleset(self, policy: Policy, folders: Folders) -> int:
        """A new ruleset fd: the policy's rules and the case's folders writable, no TCP unless
        the task has the network, signals and abstract sockets scoped to the case.

        The folders in the case's folder are granted each, not the folder itself (a right
        given to a folder holds under it): so the case can neither rename nor remove its
        report folder, and there it may only make regular files and write them (a file it
        makes with O_TRUNC needs no right to truncate): no removing, truncating, linking or
        renaming (REFER), no symbolic link or FIFO."""
        import py_landlock as ll
        from py_landlock.abi import get_supported_net, get_supported_scope

        abi = ll.ABIVersion(self.abi)
        attr = ll.RulesetAttr(
            handled_access_fs=self.every,
            handled_access_net=0 if policy.network else int(get_supported_net(abi)),
            scoped=int(get_supported_scope(abi)),
        )
        ruleset = ll.create_ruleset(attr)
        wanted = [(path, self.write) for path in folders.writable()]
        wanted.append((folders.reports, int(ll.AccessFs.MAKE_REG | ll.AccessFs.WRITE_FILE)))
        own: list[tuple[int, int]] = []
        try:
            for path, access in wanted:
                own.append((os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW), access))
            for fd, access in [*self._rules(policy), *own]:
                # A path Landlock cannot hold a rule for (a socket) is simply unreachable.
                with contextlib.suppress(ll.RulesetError):
                    rule = ll.PathBeneathAttr(allowed_access=access, parent_fd=fd)
                    ll.add_rule(ruleset, rule)
        except BaseException:
            os.close(int(ruleset))
            raise
        finally:
            for fd, _ in own:
                os.close(fd)
        return int(ruleset)

    def launch(self, command: Sequence[str], policy: Policy, folders: Folders, cwd: str) -> Launch:
        launch = Launch(list(command))
        ruleset = self.ruleset(policy, folders)
        launch.owned.append(ruleset)
        user, last_cap = self.user, self.last_cap
        program = self.deny_filter(policy.network)
        first = self.brokered(launch, policy)

        def confine() -> None:
            first()
            become(user, last_cap)
            restrict(ruleset)
            seccomp.load(program)

        launch.preexec = confine
        return launch

    def pin(self, path: str, fd: int) -> None:
        """A rule on the file follows it through a rename: made while it is away, it holds."""
        if path in self.opened:
            os.close(fd)
        else:
            self.opened[path] = fd

    def close(self) -> None:
        for fd in self.opened.values():
            os.close(fd)
        self.opened.clear()
        self.rules.clear()


def restrict(ruleset: int) -> None:
    """In a case's child, after `become`: enter the domain."""
    import py_landlock as ll

    ll.restrict_self(ll.RulesetFd(ruleset), ll.RestrictSelfFlag(0))
