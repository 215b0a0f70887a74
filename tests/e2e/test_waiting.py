"""The one wait (testing/waiting.py) given the process that would make its answer come: one
that has ended fails the wait at once, naming its status."""

from __future__ import annotations

import subprocess
import time

import pytest

from ssebench.testing.waiting import NeverHappened, wait_for


def test_a_wait_ends_when_its_process_has_ended() -> None:
    proc = subprocess.Popen(["sh", "-c", "exit 3"])
    proc.wait(10)
    started = time.monotonic()
    with pytest.raises(NeverHappened, match=r"^the mark: its process ended first \(status 3\)$"):
        wait_for(lambda: False, 60, "the mark", alive=proc)
    assert time.monotonic() - started < 5


def test_a_running_process_lets_the_wait_go_on() -> None:
    proc = subprocess.Popen(["sleep", "30"])
    try:
        answers = iter([None, None, "there"])
        assert wait_for(lambda: next(answers), 10, "the mark", step=0, alive=proc) == "there"
    finally:
        proc.kill()
        proc.wait(10)
