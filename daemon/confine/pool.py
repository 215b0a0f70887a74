"""The standbys waiting for the coming cases: one for each case the daemon expects, in order.

A call runs several cases one after another (each check's, in the level's order). The daemon
says which it expects next (the rest of the call, or once it is over the whole next call, up
to POOL_SIZE) and the supervisor makes a standby (standby.py) for each while no case runs, so
each case of a call finds its own ready: making one is most of what a short case costs. A
standby serves one case, never two; one no longer expected is killed, its folder removed by
the daemon.

Standbys wait while a case runs, as the case's own user. They are out of its reach: under
bubblewrap each is in a PID namespace of its own; under Landlock each is a Landlock domain of
its own, and a case may neither signal nor ptrace out of its domain, so it can neither kill a
standby nor open the pipe its command comes on through /proc/<pid>/fd. The supervisor tells
them from the case's processes by their first process (`roots`): reaper.py spares those trees
when it counts, signals and kills a case's processes.

Under --no-isolation a case runs unconfined as the daemon's own user: it could write a script
of its own into a waiting standby's pipe, which the next case would run. There one standby at
most waits, and only while no case runs: it is let go before any other case starts.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from ssebench.daemon.confine.mechanism import Confinement, Folders
from ssebench.daemon.confine.messages import Wanted
from ssebench.daemon.confine.policy import CaseUser, Policy
from ssebench.daemon.confine.reaper import kill_all
from ssebench.daemon.confine.standby import Standby

POOL_SIZE = 8  # standbys waiting at most: a call's first cases are made first


def pool_size(confined: bool) -> int:
    """How many standbys may wait: one where cases are not confined (see above)."""
    return POOL_SIZE if confined else 1


@dataclass
class Pool:
    """The standbys the daemon asked for (`wanted`, in the order of their cases), those made
    and waiting (`ready`, by case folder), and the first process of each (`roots`, kept exact:
    a standby reaped leaves it at once, so no process given its pid later is spared)."""

    size: int = POOL_SIZE
    wanted: list[Wanted] = field(default_factory=list)
    ready: dict[str, Standby] = field(default_factory=dict)
    roots: set[int] = field(default_factory=set)
    litter: bool = False  # a standby was let go: its processes wait to be killed
    coming: tuple[Wanted, ...] | None = None  # told while a case ran: taken after it
    kill: Callable[[Callable[[], None], Collection[int]], int] = kill_all  # reaper.py's

    def settle(self, reap: Callable[[], None]) -> Wanted | None:
        """While no case runs: the coming cases as last told taken (the next one returned, if
        they changed), the standbys let go killed."""
        coming, self.coming = self.coming, None
        if coming is not None:
            self.want(coming)
        self.sweep(reap)
        return self.wanted[0] if coming is not None and self.wanted else None

    def sweep(self, reap: Callable[[], None], keep: Collection[int] = ()) -> None:
        """While no case runs: kill what standbys let go left (all but the trees of those
        waiting, and of `keep`)."""
        if self.litter:
            self.litter = False
            self.kill(reap, {*self.roots, *keep} if keep else self.roots)

    def make(self, confined: Confinement, user: CaseUser) -> None:
        """While no case runs: the first coming case's standby that is not made yet. Not said
        should it fail: its case makes one itself, and says why."""
        want = self.missing()
        if want is None:
            return
        try:
            self.add(want, self.start(confined, user, want.policy, want.case_dir))
        except Exception:
            self.wanted.remove(want)
            self.litter = True  # whatever of it started

    def start(
        self, confined: Confinement, user: CaseUser, policy: Policy, case_dir: str
    ) -> Standby:
        """A standby for one case, made now (the other standbys may add processes of the case's
        user before it runs: the kernel's bound allows for them)."""
        return Standby.start(confined, user, policy, Folders(case_dir), self.size - 1)

    def want(self, wanted: Iterable[Wanted]) -> None:
        """The cases now expected: a standby made for any other, or for another policy, goes."""
        self.wanted = list(dict.fromkeys(wanted))[: self.size]
        keep = {want.case_dir: want.policy for want in self.wanted}
        for case_dir, standby in list(self.ready.items()):
            if keep.get(case_dir) != standby.policy:
                self._drop(case_dir)

    def missing(self) -> Wanted | None:
        """The first expected case with no standby yet."""
        return next((w for w in self.wanted if w.case_dir not in self.ready), None)

    def add(self, want: Wanted, standby: Standby) -> None:
        """`standby`, made for `want` (the first missing one: nothing changed meanwhile)."""
        self.ready[want.case_dir] = standby
        self.roots.add(standby.pid)

    def take(self, policy: Policy, case_dir: str) -> Standby | None:
        """The standby made for this case if it waits for it; out of the pool either way (a
        standby, like a folder, serves one case)."""
        self.wanted = [w for w in self.wanted if w.case_dir != case_dir]
        standby = self.ready.get(case_dir)
        if standby is None:
            return None
        if standby.policy != policy:
            self._drop(case_dir)
            return None
        del self.ready[case_dir]
        self.roots.discard(standby.pid)
        return standby

    def reaped(self, pid: int) -> bool:
        """Whether `pid` was a waiting standby's first process. One that died waiting (the OOM
        killer, root outside) is not made again ahead: its case makes its own, and says why
        should that fail too."""
        if pid not in self.roots:
            return False
        case_dir = next(d for d, standby in self.ready.items() if standby.pid == pid)
        self._drop(case_dir)
        self.wanted = [w for w in self.wanted if w.case_dir != case_dir]
        return True

    def clear(self) -> None:
        """Every standby let go (their processes are the supervisor's to kill); those still
        expected are made again once no case runs."""
        for case_dir in list(self.ready):
            self._drop(case_dir)

    def close(self, reap: Callable[[], None]) -> None:
        """The supervisor ends (or is set up again): every standby killed, nothing expected."""
        self.clear()
        self.wanted, self.coming = [], None
        self.sweep(reap)

    def _drop(self, case_dir: str) -> None:
        standby = self.ready.pop(case_dir)
        standby.discard()
        self.roots.discard(standby.pid)
        self.litter = True
