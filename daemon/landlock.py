"""Landlock: the domain each case gets, made from the daemon's policy and the case's own folder.

The policy's paths are opened once (O_PATH), so a path swapped for a symbolic link later
cannot redirect a rule; each case then gets a ruleset of its own from those and its folder,
which no other case's rules name: no case can write where another will read.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

from ssebench.daemon.isolation import Policy, visible_roots

# Pathname Unix sockets are checked from ABI 9 (LANDLOCK_ACCESS_FS_RESOLVE_UNIX): handled and
# granted nowhere, a case reaches only the sockets its own processes bound.
RESOLVE_UNIX_ABI = 9
RESOLVE_UNIX = 1 << 16
READ_DEVICES = ("/dev/random", "/dev/urandom")
WRITE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")


def handled(abi: int) -> int:
    """Every file-system right this kernel's Landlock knows."""
    import py_landlock as ll
    from py_landlock.abi import get_supported_fs

    every = int(get_supported_fs(ll.ABIVersion(abi)))
    return every | (RESOLVE_UNIX if abi >= RESOLVE_UNIX_ABI else 0)


def _rights() -> tuple[int, int, int]:
    """Read (and execute), what a rule on a file may hold, and write rights beyond reading."""
    import py_landlock as ll

    read = ll.AccessFs.READ_FILE | ll.AccessFs.READ_DIR | ll.AccessFs.EXECUTE
    on_file = read | ll.AccessFs.WRITE_FILE | ll.AccessFs.TRUNCATE | ll.AccessFs.IOCTL_DEV
    return int(read), int(on_file & ~ll.AccessFs.READ_DIR), int(ll.AccessFs.WRITE_FILE)


class Rules:
    """The paths of one daemon's policy, opened once, and the rights each gets."""

    def __init__(self, policy: Policy, abi: int) -> None:
        self.abi = abi
        self.network = policy.network
        self.every = handled(abi)
        read, self.on_file, write = _rights()
        hidden = policy.hidden
        reads = [root for path in (*policy.system, "/proc") for root in visible_roots(hidden, path)]
        for grant in policy.readable:
            inside = any(grant.real.startswith(f"{top}/") for top in hidden)
            reads += [grant.real] if inside else list(visible_roots(hidden, grant.real))
        wanted = [(path, read) for path in reads]
        wanted += [(path, read | write) for path in WRITE_DEVICES]
        wanted += [(path, read) for path in READ_DEVICES]
        wanted += [(path, self.every & ~RESOLVE_UNIX) for path in policy.writable]
        self.opened = list(self._open(wanted))

    def _open(self, wanted: Iterable[tuple[str, int]]) -> Iterable[tuple[int, int]]:
        for path, access in wanted:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # gone, or never there (/dev/tty without a terminal, /lib32)
            is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
            yield fd, (access if is_dir else access & self.on_file) & self.every

    def ruleset(self, case_dir: str) -> int:
        """A new ruleset fd: the policy's rules and `case_dir` writable, no TCP unless
        `network`, signals and abstract sockets scoped to the case."""
        import py_landlock as ll
        from py_landlock.abi import get_supported_net, get_supported_scope

        abi = ll.ABIVersion(self.abi)
        attr = ll.RulesetAttr(
            handled_access_fs=self.every,
            handled_access_net=0 if self.network else int(get_supported_net(abi)),
            scoped=int(get_supported_scope(abi)),
        )
        ruleset = ll.create_ruleset(attr)
        try:
            own = os.open(case_dir, os.O_PATH | os.O_CLOEXEC)
            try:
                for fd, access in [*self.opened, (own, self.every & ~RESOLVE_UNIX)]:
                    # A path Landlock cannot hold a rule for (a socket) is simply unreachable.
                    with contextlib.suppress(ll.RulesetError):
                        rule = ll.PathBeneathAttr(allowed_access=access, parent_fd=fd)
                        ll.add_rule(ruleset, rule)
            finally:
                os.close(own)
        except BaseException:
            os.close(int(ruleset))
            raise
        return int(ruleset)

    def close(self) -> None:
        for fd, _ in self.opened:
            os.close(fd)
        self.opened = []


def restrict(ruleset: int) -> None:
    """In a case's child, after `credentials.become`: enter the domain."""
    import py_landlock as ll

    ll.restrict_self(ll.RulesetFd(ruleset), ll.RestrictSelfFlag(0))
