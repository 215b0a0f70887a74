"""Starting one case confined: the command line, the descriptors it keeps and what its child
does before exec, for each mechanism. The case supervisor and the start-up probe both start
cases only through `Launcher`, so what the probe proves is what every case gets.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ssebench.daemon import credentials, seccomp
from ssebench.daemon.bwrap import View
from ssebench.daemon.credentials import CaseUser
from ssebench.daemon.isolation import BUBBLEWRAP, LANDLOCK, IsolationError, Mechanism, Policy
from ssebench.daemon.landlock import RESOLVE_UNIX_ABI, Rules, restrict


@dataclass
class Launch:
    """What Popen needs for one case; `close` once the child started."""

    argv: list[str]
    pass_fds: tuple[int, ...] = ()
    preexec: Callable[[], None] | None = None
    owned: list[int] = field(default_factory=list)

    def close(self) -> None:
        for fd in self.owned:
            os.close(fd)
        self.owned = []


class Launcher:
    """One daemon's way of starting cases: made once (paths opened, filter built)."""

    def __init__(self, mechanism: Mechanism, policy: Policy) -> None:
        self.mechanism = mechanism
        self.policy = _with_reach(mechanism, policy)
        self.user = self.policy.user
        self.others = 0 if self.user is None else credentials.processes_of(self.user.uid)
        self.last_cap = credentials.last_capability()
        self.view: View | None = None
        self.rules: Rules | None = None
        self.program = b""
        confined = mechanism.name in (BUBBLEWRAP, LANDLOCK)
        if confined:
            own = mechanism.name == BUBBLEWRAP
            self.program = seccomp.build(
                network=policy.network,
                own_network=own,
                unix=own or mechanism.landlock_abi >= RESOLVE_UNIX_ABI,
                host_ipc=not own,
            )
        if mechanism.name == BUBBLEWRAP:
            self.view = View(mechanism, self.policy)
            if self.view.switches_user and not mechanism.setpriv:
                raise IsolationError(
                    "running cases as the tree's owner under a root bubblewrap needs "
                    "util-linux's setpriv"
                )
        elif mechanism.name == LANDLOCK:
            self.rules = Rules(self.policy, mechanism.landlock_abi)

    def limit_own_processes(self) -> None:
        """Give this process (the case supervisor) the cases' limits, which every case then
        inherits: no code need run in a case's child for them (so bubblewrap and unconfined
        cases start by vfork), and this process needs far less than any case may use."""
        credentials.set_limits(self.policy.limits, self.others)

    def launch(self, command: Sequence[str], case_dir: str, cwd: str) -> Launch:
        """How to start `command` as a case whose own folder is `case_dir`."""
        if self.view is not None:
            folder = os.open(case_dir, os.O_PATH | os.O_CLOEXEC)
            filter_fd = seccomp.program_fd(self.program)
            owned = [folder, filter_fd]
            argv = self.view.argv(list(command), folder, cwd, filter_fd, owned)
            # bubblewrap runs as the daemon: as root it becomes the case's user inside.
            return Launch(argv, (*self.view.fds(), *owned), owned=owned)
        if self.rules is not None:
            ruleset = self.rules.ruleset(case_dir)
            user = self.user or CaseUser(os.geteuid(), os.getegid())
            program, last_cap = self.program, self.last_cap

            def confine() -> None:
                credentials.become(user, last_cap)
                restrict(ruleset)
                seccomp.load(program)

            return Launch(list(command), (), confine, owned=[ruleset])
        return Launch(list(command))

    def close(self) -> None:
        for part in (self.view, self.rules):
            if part is not None:
                part.close()


def _with_reach(mechanism: Mechanism, policy: Policy) -> Policy:
    """Landlock leaves the folders on the way to a granted file to the case user's own
    permissions: where that user cannot reach one (a task folder locked to root), it keeps
    one capability past them (credentials.CaseUser), and Landlock alone decides what it
    reads. bubblewrap binds the files themselves, so the folders on the way do not count."""
    user = policy.user
    if mechanism.name != LANDLOCK or user is None or user.reach is not None:
        return policy
    paths = [path for grant in policy.readable for path in (grant.path, grant.real)]
    unreachable = credentials.cannot_reach(user, [*paths, *policy.writable])
    if not unreachable:
        return policy
    reach = credentials.reach_capability()
    if reach is None:
        raise IsolationError(
            f"uid {user.uid}, who runs the cases, cannot reach {unreachable[0]}, and this "
            "process has no capability to let it past the folders on the way"
        )
    return replace(policy, user=replace(user, reach=reach))


def start(spec: Launch, **popen: Any) -> subprocess.Popen[bytes]:
    """Popen for a launch spec (closing what was opened only for it, whatever happens)."""
    try:
        return subprocess.Popen(spec.argv, pass_fds=spec.pass_fds, preexec_fn=spec.preexec, **popen)
    finally:
        spec.close()
