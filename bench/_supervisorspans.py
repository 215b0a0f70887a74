"""The case supervisor, its steps timed: what bench/casespans.py starts instead of the plain one.

It wraps the supervisor's own steps (the trusted core is not edited for a benchmark) and
writes one line per step, `name start_ns end_ns`, on CLOCK_MONOTONIC, which the daemon's
`time.perf_counter_ns` reads too: the two processes' spans lie on one time line. The file is
named by SSEBENCH_SPANS.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from ssebench.daemon.confine import reaper
from ssebench.daemon.confine import supervisor as sup
from ssebench.daemon.confine.broker import Broker
from ssebench.daemon.confine.bubblewrap import Bubblewrap
from ssebench.daemon.confine.landlock import Landlock
from ssebench.daemon.confine.mechanism import Folders, Launch
from ssebench.daemon.confine.pool import Pool
from ssebench.daemon.confine.running import Case
from ssebench.daemon.confine.standby import Standby

OUT = os.open(os.environ["SSEBENCH_SPANS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)


def note(name: str, start: int, end: int) -> None:
    os.write(OUT, f"{name} {start} {end}\n".encode())


def timed(owner: Any, attr: str, name: str) -> None:
    """`owner.attr`, each call written as a span named `name`."""
    call: Callable[..., Any] = getattr(owner, attr)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter_ns()
        try:
            return call(*args, **kwargs)
        finally:
            note(name, start, time.perf_counter_ns())

    setattr(owner, attr, wrapper)


def reaped_point() -> None:
    """A point when the case's shell is seen ended (its status read)."""
    reap = sup.Supervisor.reap

    def wrapper(self: sup.Supervisor) -> None:
        before = self.case.status if self.case is not None else 0
        reap(self)
        if self.case is not None and before is None and self.case.status is not None:
            now = time.perf_counter_ns()
            note("shell reaped", now, now)

    sup.Supervisor.reap = wrapper  # type: ignore[method-assign]


def install() -> None:
    for owner, attr, name in [
        (sup.Supervisor, "start", "sup: launch"),
        (sup.Supervisor, "settle", "sup: settle (pool, user's permissions for the next)"),
        (sup.Supervisor, "_shape", "sup: the user's permissions shaped (access.py)"),
        (Pool, "take", "sup: the standby taken"),
        (Pool, "sweep", "sup: sweep (kill what standbys let go left)"),
        (sup, "DiskWatch", "sup: disk watch (free space measured)"),
        (sup, "readable", "sup: reads checked"),
        (sup, "Inotify", "sup: inotify made"),
        (sup, "Reports", "sup: report folder watched"),
        (Standby, "ignite", "sup: ignite"),
        (sup, "kill_all", "sup: kill_all (leftovers killed)"),
        (reaper, "signal_all", "sup: kill_all: SIGKILL sent (a /proc scan)"),
        (reaper, "has_children", "sup: kill_all: any child left?"),
        (reaper, "child_ended", "sup: kill_all: waits between scans"),
        (Broker, "handle", "sup: broker: a connect answered"),
        (Case, "finish", "sup: finish"),
        (Case, "clean", "sup: finish: /tmp leftovers, disk look"),
        (Case, "copy_reports", "sup: finish: reports copied"),
        (Pool, "make", "ahead: a standby made"),
        (Bubblewrap, "launch", "ahead: bwrap's command line"),
        (Landlock, "launch", "ahead: Landlock's ruleset"),
        (Launch, "start", "ahead: the sandbox's fork/exec (Popen)"),
        (Launch, "broker_listener", "ahead: the broker's listener received"),
        (Folders, "make_reports", "ahead: the report folder made"),
    ]:
        timed(owner, attr, name)
    reaped_point()


def before() -> None:
    """kill_all as it was before issue 34's change (a scan at once, a sleep between scans)."""

    def kill_all(reap: Callable[[], None], spare: Any = reaper.NONE) -> int:
        killed = 0
        for _ in range(1000):
            reap()
            if not reaper.has_children(spare):
                return killed
            sent = reaper.signal_all(reaper.signal.SIGKILL, spare=spare)
            reap()
            if not sent:
                return killed
            killed += sent
            time.sleep(0.001)
        return killed

    sup.kill_all = kill_all


if __name__ == "__main__":
    if os.environ.get("SSEBENCH_SPANS_BEFORE"):
        before()
    install()
    sup.main()
