"""A standalone daemon that dies, restarts, loses its spool or its source tree: sidecar mode.

`ssebench daemon` runs as its own process (TMPDIR points into the test's folder, so its spool
is found and checked), and `ssebench serve --daemon-url` talks to it. The build runs the
task's scenario.sh, which each test writes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ssebench.core.report import INTERNAL_FAILURE
from ssebench.testing.calls import call, call_async
from ssebench.testing.procs import assert_none_left, kill_all
from ssebench.testing.servers import (
    clean_env,
    free_port,
    runner_tree,
    start_daemon,
    start_server,
    write_task,
)
from ssebench.testing.waiting import wait_for

from .reports import PASSED_AT_3, TOKEN_BUILD, check_token_report, saved_logs

pytestmark = pytest.mark.timeout(120)

TASK = """
[checks.build]
run = 'bash "$SSE_SOURCE_DIR/scenario.sh"'
timeout = 60
"""
LINES = 20_000


@dataclass
class Sidecar:
    tmp: Path
    task: Path
    env: dict[str, str]
    port: int
    daemon: Any
    server: Any

    def spool_root(self) -> Path:
        return Path(self.env["TMPDIR"]) / f"ssebench-{os.geteuid()}"  # the daemon's folders

    def folders(self) -> set[Path]:
        """The daemon's folders; none once the last is gone (their parent goes with it)."""
        root = self.spool_root()
        return set(root.iterdir()) if root.exists() else set()

    def restart(self, sig: int = signal.SIGTERM) -> None:
        self.daemon.send_signal(sig)
        self.daemon.wait(10)
        self.daemon = start_daemon(self.tmp, self.task, self.port, self.env)


@pytest.fixture(scope="module")
def sidecar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sidecar]:
    tmp = tmp_path_factory.mktemp("sidecar")
    task = write_task(tmp / "task", TASK)
    (task / "src" / "scenario.sh").write_text("echo built\n")
    (tmp / "spools").mkdir()
    env = clean_env(tmp, TMPDIR=str(tmp / "spools"))
    port = free_port()
    daemon = start_daemon(tmp, task, port, env)
    server = start_server(
        tmp,
        ["--daemon-url", f"http://127.0.0.1:{port}", "--difficulty", "3"],
        env=clean_env(tmp),
        embedded=False,
    )
    side = Sidecar(tmp, task, env, port, daemon, server)
    try:
        yield side
    finally:
        server.stop()
        if side.daemon.poll() is None:
            side.daemon.terminate()
            side.daemon.wait(10)
        kill_all(task)


@pytest.fixture
def scenario(sidecar: Sidecar) -> Iterator[Any]:
    """Write the build's script; after the test, nothing runs and a plain build passes."""

    def write(script: str) -> None:
        (sidecar.task / "src" / "scenario.sh").write_text(script)

    yield write
    assert_none_left(sidecar.task)
    write("echo built\n")
    if sidecar.daemon.poll() is not None:
        sidecar.daemon = start_daemon(sidecar.tmp, sidecar.task, sidecar.port, sidecar.env)
    assert call(sidecar.server.url) == PASSED_AT_3
    assert "Traceback" not in sidecar.server.stderr()


def _call_in_background(url: str) -> tuple[threading.Thread, list[str]]:
    answers: list[str] = []
    thread = threading.Thread(target=lambda: answers.append(asyncio.run(call_async(url))))
    thread.start()
    return thread, answers


def test_daemon_killed_mid_run(sidecar: Sidecar, scenario: Any) -> None:
    """SIGKILL: the call answers the internal-failure text at once, the daemon's guard kills
    the running command's group and removes the dead daemon's spool, and a restarted daemon
    serves the next call."""
    scenario('touch "$SSE_SOURCE_DIR/running"; sleep 30 & sleep 30\n')
    logs_before = saved_logs(sidecar.server)
    spools = sidecar.folders()
    thread, answers = _call_in_background(sidecar.server.url)
    wait_for(
        lambda: (tree := runner_tree(sidecar.env)) is not None and (tree / "running").exists(),
        30.0,
        "the build's mark in its runner copy",
    )
    killed = time.monotonic()
    sidecar.daemon.send_signal(signal.SIGKILL)
    sidecar.daemon.wait(10)
    thread.join(30)
    print(f"\nanswered {time.monotonic() - killed:.3f} s after the daemon was killed")
    assert answers == [INTERNAL_FAILURE]
    assert_none_left(sidecar.task)
    assert saved_logs(sidecar.server) == logs_before
    wait_for(  # the guard removes them
        lambda: not sidecar.folders() & spools, 3, "the killed daemon's spool removed", 0.02
    )
    sidecar.daemon = start_daemon(sidecar.tmp, sidecar.task, sidecar.port, sidecar.env)


def test_daemon_restarted_between_calls(sidecar: Sidecar, scenario: Any) -> None:
    """Each call's report and saved log are its own run's, across the restart."""
    scenario(TOKEN_BUILD.format(lines=LINES) + "\n")
    first = check_token_report(call(sidecar.server.url), LINES)
    sidecar.restart()
    second = check_token_report(call(sidecar.server.url), LINES)
    assert first != second
    sidecar.restart(signal.SIGKILL)  # and after a crash too
    third = check_token_report(call(sidecar.server.url), LINES)
    assert third not in (first, second)
    assert len(saved_logs(sidecar.server)) >= 3


def _remove_the_spool(sidecar: Sidecar) -> Path:
    """Do what a temp cleaner would: the daemon's spool and its logs gone."""
    [spool] = sidecar.spool_root().glob("ssebench-logs-*")
    for entry in spool.iterdir():
        entry.unlink()
    spool.rmdir()
    return spool


def test_the_spool_removed_under_a_running_daemon(sidecar: Sidecar, scenario: Any) -> None:
    """A temp cleaner takes the daemon's spool: the next run makes it again."""
    scenario("echo built\n")
    assert call(sidecar.server.url) == PASSED_AT_3
    spool = _remove_the_spool(sidecar)
    assert call(sidecar.server.url) == PASSED_AT_3
    assert spool.is_dir()


def test_the_spool_unwritable_then_back(sidecar: Sidecar, scenario: Any) -> None:
    """The spool's path taken by a file: the runner cannot log, so the call is an internal
    failure (not the build failing), and it recovers once the path is free."""
    scenario("echo built\n")
    assert call(sidecar.server.url) == PASSED_AT_3
    spool = _remove_the_spool(sidecar)
    spool.write_text("in the way")
    try:
        assert call(sidecar.server.url) == INTERNAL_FAILURE
    finally:
        spool.unlink()
    assert "cannot make the log folder" in sidecar.server.stderr()


def test_the_source_tree_gone_then_back(sidecar: Sidecar, scenario: Any) -> None:
    scenario("echo built\n")
    source = sidecar.task / "src"
    source.rename(sidecar.task / "src-away")
    try:
        assert call(sidecar.server.url) == INTERNAL_FAILURE
    finally:
        (sidecar.task / "src-away").rename(source)
    assert "internal testing failure" in sidecar.server.stderr()
