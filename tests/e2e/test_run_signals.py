"""`ssebench run` hands SIGTERM and SIGINT on to the agent's command from before it starts it.

On a loaded machine a signal can land between the command's start and the moment a handler
that forwards it is in place; it was then taken for a signal before the command (run unwound
and stopped its server) while the command went on, nobody's child any more. The window cannot
be hit on demand with real timing, so the signal is sent from inside the command's start: a
fault injected where a real one lands by chance. The command itself is real.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from ssebench.core.cli import run

WAITER = "import time; time.sleep(30)"


class _Unwound(Exception):
    """What run_with_server's own SIGTERM handler raises before the command runs."""


@pytest.fixture
def unwinding() -> Iterator[None]:
    def raise_unwound(signum: int, frame: Any) -> None:
        raise _Unwound

    previous = signal.signal(signal.SIGTERM, raise_unwound)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_sigterm_as_the_command_starts_reaches_it(
    monkeypatch: pytest.MonkeyPatch, unwinding: None
) -> None:
    started: list[subprocess.Popen[bytes]] = []
    real = subprocess.Popen

    def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        started.append(real(*args, **kwargs))
        os.kill(os.getpid(), signal.SIGTERM)  # lands before Popen has returned to run
        return started[-1]

    monkeypatch.setattr(run.subprocess, "Popen", popen)
    try:
        status = run.run_command([sys.executable, "-c", WAITER])
    finally:
        for child in started:  # only what this test started
            if child.poll() is None:
                child.kill()
                child.wait()
    assert status == 128 + signal.SIGTERM
    assert [child.returncode for child in started] == [-signal.SIGTERM]
