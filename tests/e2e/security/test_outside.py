"""A withheld file outside the task folder (ARVO's /tmp/poc), with every mechanism, as root with
the tree the agent's and the task folder locked to root (outside.py): a build at level 2, and
the build at grading, learn nothing of it, not even that it exists (red team 12-05: under
Landlock a `user:<uid>:---` entry let the build print the PoC's size and owner); the PoC case
at grading reads it, the real one whatever the build planted at its path; it comes back
exactly as it was, even when the daemon or its case supervisor is killed. Unconfined, the same
probe finds it: the probe can fail.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import fastmcp
import pytest

from e2e.security.outside import NOTHING, SEEN, Outside, make_outside
from e2e.security.test_attacks import mechanisms
from e2e.test_confine import standbys
from ssebench.core.daemons.door import ServiceConfig, choose_isolation
from ssebench.core.daemons.inprocess import open_service
from ssebench.core.registry import build_registry
from ssebench.daemon.confine.procfs import processes
from ssebench.daemon.task import load_task
from ssebench.plugins import build
from ssebench.plugins import poc as poc_plugin
from ssebench.testing.procs import commands
from ssebench.testing.servers import clean_env, start_server
from ssebench.testing.waiting import wait_for, wait_for_async

pytestmark = [
    pytest.mark.security,
    pytest.mark.timeout(300),
    pytest.mark.skipif(os.geteuid() != 0, reason="root makes the case user, the lock, /tmp's file"),
]

RunCli = Callable[..., subprocess.CompletedProcess[str]]
PASS = "--- /dev/null\n+++ b/PASS\n@@ -0,0 +1 @@\n+pass\n"  # what lets the build pass
AT_LEVEL_2 = (
    "test_patch result: FAILED. The project failed to build. Please reassess the correctness of "
    "your patch.\n\nChecks:\n- build: FAILED\n- functional tests: not run (the build failed)\n\n"
    "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is "
    "reported about them.\n\nFull log (build):\n"
)


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[Callable[..., Outside]]:
    made: list[Outside] = []

    def make(build: str = "python3 probe.py && test -e PASS", where: str = "/tmp") -> Outside:
        made.append(make_outside(tmp_path / "task", build, where))
        return made[-1]

    yield make
    for each in made:
        each.remove()


@pytest.mark.parametrize("mechanism", mechanisms())
def test_a_build_learns_nothing_of_a_withheld_file_outside_the_task_folder(
    tmp_path: Path, mechanism: str, outside: Callable[..., Outside], run_cli: RunCli
) -> None:
    poc = outside()
    before = poc.state()
    done = run_cli("check", "--task", str(poc.task), "--difficulty", "2", "--isolation",
                   mechanism, env=clean_env(tmp_path))  # fmt: skip
    assert (done.returncode, done.stdout) == (1, AT_LEVEL_2 + NOTHING), done.stderr
    assert poc.state() == before


def test_unconfined_the_same_build_finds_it(
    tmp_path: Path, outside: Callable[..., Outside], run_cli: RunCli
) -> None:
    poc = outside()
    done = run_cli("check", "--task", str(poc.task), "--difficulty", "2", "--no-isolation",
                   env=clean_env(tmp_path))  # fmt: skip
    assert done.stdout.startswith(AT_LEVEL_2 + SEEN), done.stdout


@pytest.mark.parametrize("where", ["/tmp", "/var"])
@pytest.mark.parametrize("mechanism", mechanisms())
def test_at_grading_the_build_learns_nothing_and_the_poc_case_reads_the_real_file(
    tmp_path: Path,
    mechanism: str,
    where: str,
    outside: Callable[..., Outside],
    run_cli: RunCli,
    passable_tmp: Path,
) -> None:
    """Every check runs; each reads its own files. The build plants a link at the file's path
    (where a case may write /tmp): the PoC case still reads the real file. Under /var no
    system folder's rule covers it: the PoC case reaches it by the rule made on the file
    itself, which its sandbox got (made while the file was away) from where it was opened."""
    plant = "ln -s /etc/hostname $(cat name.txt) 2>/dev/null"  # where it may write (/tmp)
    poc = outside(f"python3 probe.py && {{ {plant} || true; }} && test -e PASS", where)
    before = poc.state()
    patch = tmp_path / "pass.patch"
    patch.write_text(PASS)
    logs, env = tmp_path / "logs", clean_env(tmp_path, TMPDIR=str(passable_tmp))
    done = run_cli("grade", "--task", str(poc.task), "--patch", str(patch), "--isolation",
                   mechanism, "--quiet", "--logs", str(logs), env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    graded = json.loads(done.stdout)
    assert [(c["key"], c["status"]) for c in graded["checks"]] == [
        ("build", "passed"), ("pocs", "passed"), ("intent", "passed"), ("functional", "passed"),
    ]  # fmt: skip
    assert (logs / "build-0.log").read_text() == NOTHING
    # It finds the file (in /tmp by every route; under /var its folder is no case's to list
    # but under bubblewrap, which makes it for the file), /proc too (its command line, its fd
    # 3), then reads it.
    listed = where == "/tmp" or mechanism == "bubblewrap"
    seen = SEEN if listed else SEEN.replace(": 1\n", ": 0\n")
    found = re.fullmatch(
        rb"(.*\n)/proc: [1-9][0-9]*\n(.*)", (logs / "pocs-0.log").read_bytes(), re.S
    )
    assert found is not None and found.groups() == (seen.encode(), poc.content)
    assert poc.state() == before


@pytest.mark.skipif("landlock" not in mechanisms(), reason="Landlock moves it (bubblewrap binds)")
def test_a_poc_sandbox_made_while_its_file_was_away_reads_it(
    tmp_path: Path, outside: Callable[..., Outside]
) -> None:
    """The pool makes the PoC case's sandbox while the build's check keeps its file away. Under
    /var no system folder's rule covers the file: the sandbox's rule on it is made on the
    descriptor opened before it first moved, which reaches it once it is back in place."""
    poc = outside(where="/var")
    before = poc.state()
    registry = build_registry(plugins=[build, poc_plugin], use_entry_points=False)
    task = load_task(poc.task, registry.checks)
    cases = open_service(ServiceConfig(task, registry, None, choose_isolation("landlock")))
    log = tmp_path / "case.log"

    async def scenario() -> tuple[int | None, bytes]:
        await cases.run_command("build", "true", timeout=20, log_path=log)
        await cases.prepare(["build", "pocs"])
        await wait_for_async(lambda: len(standbys(cases)) == 2, 20, "both sandboxes made")
        assert poc.state() == (None,)  # away while they were made
        end = await cases.run_command("pocs", f"cat {poc.path}", timeout=20, log_path=log)
        return end.exit_code, log.read_bytes()

    try:
        assert asyncio.run(scenario()) == (0, poc.content)
    finally:
        cases.close()
    assert poc.state() == before


def call(url: str) -> str:
    async def once() -> str:
        async with fastmcp.Client(url) as client:
            result = await client.call_tool_mcp("test_patch", {}, timeout=120)
            return str(result.content[0].text)

    return asyncio.run(once())


def supervisor_of(pid: int) -> int:
    """The case supervisor the server `pid` started."""
    found = commands(re.compile(r"-m ssebench\.daemon\.confine\.supervisor "))
    children = {each.pid for each in processes() if each.ppid == pid}
    (supervisor,) = set(found) & children
    return supervisor


@pytest.mark.skipif("landlock" not in mechanisms(), reason="Landlock moves it (bubblewrap binds)")
@pytest.mark.parametrize("killed", ["daemon", "supervisor"])
def test_a_killed_daemon_or_supervisor_loses_no_withheld_file(
    tmp_path: Path, killed: str, outside: Callable[..., Outside], run_cli: RunCli
) -> None:
    """Its case supervisor sees the daemon gone and puts the file back; a supervisor killed
    leaves it in the stash, with its journal, for the next ssebench to put back."""
    poc = outside()
    before = poc.state()
    env = clean_env(tmp_path)
    args = ["--task", str(poc.task), "--difficulty", "2", "--isolation", "landlock"]
    server = start_server(tmp_path, args, env=env)
    try:
        assert call(server.url) == AT_LEVEL_2 + NOTHING.rstrip("\n")  # the report drops it
        assert poc.state() == (None,)  # away while the daemon lives
        supervisor = supervisor_of(server.pid)
        os.kill(supervisor if killed == "supervisor" else server.pid, signal.SIGKILL)
        if killed == "daemon":
            wait_for(lambda: poc.state() == before, 30, "the file back once the daemon died")
            return
        server.stop()
        assert poc.state() == (None,)
        done = run_cli("check", "--task", str(poc.task), "--isolation", "landlock", env=env)
        assert f"ssebench: warning: put back {poc.path}, which an ssebench process that was " in (
            done.stderr
        )
        assert poc.state() == before
    finally:
        server.stop()
