"""kill_all's wait between two scans, on real processes: it ends when a child of ours ends (the
supervisor's kill of a bubblewrap case waits for its init's last steps), never for a spared one.
kill_all itself (whole trees, detached ones, fork bombs) is held by tests/e2e/security/."""

from __future__ import annotations

import os
import subprocess
import time

from ssebench.daemon.confine.procfs import children
from ssebench.daemon.confine.reaper import child_ended


def _ended(pid: int) -> bool:
    """Whether `pid`, a child of ours, has ended (it is left unreaped)."""
    found = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return found is not None


def test_a_child_ending_ends_the_wait_at_once() -> None:
    child = subprocess.Popen(["sleep", "0.2"])
    try:
        started = time.monotonic()
        child_ended(set(), 60.0)  # a sleep would take its whole minute
        assert time.monotonic() - started < 30.0
        assert _ended(child.pid)  # the caller reaps it, not the wait
    finally:
        child.kill()
        child.wait()


def test_a_spared_child_ending_does_not() -> None:
    others = set(children(os.getpid()) or [])
    spared = subprocess.Popen(["sleep", "0.05"])
    waiting = subprocess.Popen(["sleep", "60"])
    try:
        started = time.monotonic()
        child_ended({*others, spared.pid}, 1.0)
        assert time.monotonic() - started >= 0.9  # waited its tick: the spared end woke nothing
        assert _ended(spared.pid) and not _ended(waiting.pid)
    finally:
        for proc in (spared, waiting):
            proc.kill()
            proc.wait()
