"""The trusted core with real cases: what a confined case can and cannot do, with every mechanism
this machine has, through the daemon's case service (a supervisor process, the case under
bubblewrap or Landlock as a user of its own, the processes it leaves behind looked up in /proc
afterwards).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import time
import uuid
from pathlib import Path

import pytest

from ssebench.core.case import CaseRun
from ssebench.core.daemons.door import ServiceConfig, available, choose_isolation
from ssebench.core.daemons.inprocess import open_service
from ssebench.core.registry import build_registry
from ssebench.daemon.confine.procfs import processes
from ssebench.daemon.confine.user import case_user
from ssebench.daemon.guard import make_folder, private_parent, remove_folder
from ssebench.daemon.service import CaseService
from ssebench.daemon.task import load_task
from ssebench.plugins import build, intent, poc
from ssebench.testing.procs import alive, commands
from ssebench.testing.waiting import wait_for_async

pytestmark = pytest.mark.timeout(120)

MECHANISMS = ["none", *available(case_user())]
CONFINED = [name for name in MECHANISMS if name != "none"]
TOML = """files = ["intent/t.sh"]
env = { GREETING = "hi" }
[checks.build]
run = "true"
[checks.pocs]
files = ["pocs"]
cases = ["cat $SSE_TASK_DIR/pocs/one.bin"]
"""


REGISTRY = build_registry(plugins=[build, poc, intent], use_entry_points=False)


def write_task(root: Path, toml: str) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "pocs").mkdir()
    (root / "pocs" / "one.bin").write_text("poc one\n")
    (root / "intent").mkdir()
    (root / "intent" / "t.sh").write_text("exit 0\n")
    (root / "task.toml").write_text('source = "src"\n' + toml)
    return root


def open_cases(tmp: Path, mechanism: str, toml: str = TOML, **options: object) -> CaseService:
    """A case service of the task `toml` describes (every check, as the evaluator's), its
    cases confined by `mechanism`."""
    task = load_task(write_task(tmp, toml), REGISTRY.checks)
    how = choose_isolation(mechanism)
    return open_service(ServiceConfig(task, REGISTRY, None, how, **options))  # type: ignore[arg-type]


def run_case(
    tmp: Path, mechanism: str, command: str, check: str = "build", **options: object
) -> tuple[CaseRun, str, Path]:
    """One case; its end, its log, and a copy of what its tree held afterwards (the runner
    copy goes with the daemon)."""
    cases = open_cases(tmp, mechanism, **options)
    log = tmp / "case.log"
    kept = tmp / "tree-after"
    try:
        end = asyncio.run(cases.run_command(check, command, timeout=20, log_path=log))
        os.system(f"cp -a {cases.place.copy.path} {kept}")
    finally:
        cases.close()
    return end, log.read_text(errors="replace"), kept


def escapes(nonce: str) -> str:
    """Every way out a case tries, its sleeps told from another suite's by `nonce`."""
    return (
        f"setsid -f env -u SSE_CASE_ID sleep 310.{nonce}; "
        f"(sleep 311.{nonce} & echo $! >> pids) ; "
        f"nohup bash -c 'exec -a renamed-{nonce} sleep 312' >/dev/null 2>&1 & echo $! >> pids; "
        f"setsid -f bash -c 'echo $$ >> pids; while :; do (sleep 313.{nonce} &); sleep 0.01; "
        f"done'; sleep 0.5; pgrep -f 'sleep 31[0-3][.]{nonce}' >> pids; echo started"
    )


def standbys(cases: CaseService) -> list[int]:
    """The sandboxes made ahead that wait for their command: the supervisor's live children."""
    assert cases.place.runner._proc is not None
    supervisor = cases.place.runner._proc.pid
    return [p.pid for p in processes() if p.ppid == supervisor and p.alive]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_nothing_a_case_started_outlives_it(tmp_path: Path, mechanism: str) -> None:
    nonce = uuid.uuid4().hex[:8].translate(str.maketrans("abcdef", "123456"))  # digits
    end, log, tree = run_case(tmp_path, mechanism, escapes(nonce))
    assert (end.exit_code, log) == (0, "started\n")
    pids = [int(line) for line in (tree / "pids").read_text().split()]
    if mechanism == "bubblewrap":
        pids = []  # the pids it wrote are its own namespace's: look for the commands instead
    time.sleep(0.2)
    assert [pid for pid in pids if alive(pid)] == []
    pattern = re.compile(rf"sleep 31[0-3][.]{nonce}|renamed-{nonce}")
    assert list(commands(pattern).values()) == []


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_log_is_cut_at_its_limit_and_says_so(tmp_path: Path, mechanism: str) -> None:
    end, log, _ = run_case(tmp_path, mechanism, "yes | head -c 5000; echo done >&2", log_limit=1000)
    assert (end.exit_code, end.dropped) == (0, 4005)
    assert log == "y\n" * 500 + (
        "\n[ssebench: this case printed more than its log's limit of 1000 bytes; "
        "the 4005 bytes after it were dropped]\n"
    )


@pytest.mark.parametrize("mechanism", CONFINED)
def test_what_a_confined_case_can_and_cannot_do(tmp_path: Path, mechanism: str) -> None:
    script = (
        'for p in "$SSE_TASK_DIR/task.toml" "$SSE_TASK_DIR/intent/t.sh" '
        '"$SSE_TASK_DIR/pocs/one.bin" /etc/hostname; do '
        'cat "$p" >/dev/null 2>&1 && echo "read $p" || echo "no $p"; done; '
        '{ echo x > "$SSE_TASK_DIR/intent/t.sh"; } 2>/dev/null && echo wrote '
        "|| echo no-write-task; "
        'echo x > built && echo wrote-tree; echo x > "$TMPDIR/t" && echo wrote-tmpdir; '
        'echo x > "$HOME/h" && echo wrote-home; touch /usr/x 2>/dev/null || echo no-write-usr; '
        f"kill -0 {os.getpid()} 2>/dev/null || echo no-signal; "
        "(exec 3<>/dev/tcp/127.0.0.1/22) 2>/dev/null && echo tcp || echo no-tcp; "
        'echo "$GREETING ${SSE_DIFFICULTY-unset} $(id -u)"'
    )
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        _, log, tree = run_case(tmp_path, mechanism, script.replace("22", str(port)))
    task = tmp_path
    uid = log.splitlines()[-1].split()[-1]
    assert log.splitlines() == [
        f"no {task}/task.toml",
        f"read {task}/intent/t.sh",
        f"no {task}/pocs/one.bin",  # the build reads its own check's files, never the PoCs'
        "read /etc/hostname",
        "no-write-task",
        "wrote-tree",
        "wrote-tmpdir",
        "wrote-home",
        "no-write-usr",
        "no-signal",
        "no-tcp",
        f"hi unset {uid}",
    ]
    assert (task / "intent" / "t.sh").read_text() == "exit 0\n"
    assert (tree / "built").exists() and not (task / "src" / "built").exists()
    if os.geteuid() == 0:
        assert int(uid) not in (0, os.stat(task / "src").st_uid)  # a user of its own


def test_a_supervisor_killed_from_outside_fails_its_case_and_is_started_again(
    tmp_path: Path,
) -> None:
    cases = open_cases(tmp_path, "none")
    runner = cases.place.runner

    async def scenario() -> list[str]:
        seen = []
        first = await cases.run_command("build", "echo one", timeout=10,
                                        log_path=tmp_path / "1.log")  # fmt: skip
        seen.append(f"first {first.exit_code}")
        running = asyncio.create_task(
            cases.run_command("build", "echo $$ > pid; exec sleep 30", timeout=60,
                              log_path=tmp_path / "2")
        )  # fmt: skip
        await wait_for_async(lambda: case_pid(cases), 20, "the case's pid")
        assert runner._proc is not None
        runner._proc.kill()  # as root outside the case could
        try:
            await running
        except Exception as exc:
            seen.append(f"{type(exc).__name__}: {exc}")
        again = await cases.run_command("build", "echo three", timeout=10,
                                        log_path=tmp_path / "3.log")  # fmt: skip
        seen.append(f"again {again.exit_code} {(tmp_path / '3.log').read_text().strip()}")
        return seen

    try:
        assert asyncio.run(scenario()) == [
            "first 0",
            "RunnerError: the case supervisor died",
            "again 0 three",
        ]
    finally:
        # Its case outlived it: a case cannot kill the supervisor, only a privileged process
        # outside could (the test, here), and such a process is beyond what ssebench confines.
        # The test ends it, by the pid it wrote.
        pid = case_pid(cases)
        cases.close()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def case_pid(cases: CaseService) -> int | None:
    """The pid a case wrote into its tree (unconfined, it is the machine's), once written."""
    pid = cases.place.copy.path / "pid"
    text = pid.read_text() if pid.exists() else ""
    return int(text) if text.strip().isdigit() else None


@pytest.mark.parametrize("mechanism", CONFINED)
def test_another_daemons_folders_stay_out_of_reach_even_made_later(
    tmp_path: Path, mechanism: str
) -> None:
    cases = open_cases(tmp_path, mechanism)
    other = make_folder("ssebench-logs-")  # another daemon's spool, made after ours
    try:
        (other / "log").write_text("MARK-OTHER-SPOOL\n")
        log = tmp_path / "case.log"
        look = f"cat {other}/log; ls {other.parent}"
        asyncio.run(cases.run_command("build", look, timeout=10, log_path=log))
        assert "MARK-OTHER-SPOOL" not in log.read_text()
        assert other.name not in log.read_text().splitlines()  # not in the listing
    finally:
        cases.close()
        remove_folder(other)
    assert not private_parent().exists() or list(private_parent().iterdir()) != [other]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_prepared_sandbox_serves_one_case_of_its_check_and_leaves_it_nothing(
    tmp_path: Path, mechanism: str
) -> None:
    """The daemon prepares the next case's sandbox while idle (standby.py): a case started in
    one sees what a case started cold sees, its own check's files alone, a folder of its own,
    and nothing of the waiting shell (no variable, no descriptor); a guess waits until the
    daemon guesses otherwise, then goes with its folder."""
    cases = open_cases(tmp_path, mechanism)
    look = (
        # the shell's descriptors listed by a child of its own, no pipe of the shell's open
        'ls /proc/$$/fd > "$TMPDIR/fds"; echo $(cat "$TMPDIR/fds"); '
        'env | cut -d= -f1 | sort | tr "\\n" " "; echo; '
        'echo "$TMPDIR"; cat "$SSE_TASK_DIR/pocs/one.bin" 2>/dev/null || echo no-poc'
    )

    async def scenario() -> tuple[list[list[str]], list[int]]:
        seen = []
        for guess, check in [(None, "build"), ("build", "build"), ("pocs", "build"),
                             ("pocs", "pocs"), ("build", "pocs")]:  # fmt: skip
            if guess is not None:
                await cases.prepare([guess])
                await wait_for_async(lambda: standbys(cases), 10, "the prepared sandbox")
            log = tmp_path / "case.log"
            end = await cases.run_command(check, look, timeout=20, log_path=log)
            assert end.exit_code == 0, log.read_text()
            seen.append(log.read_text().splitlines())
        # The last guess (build), its case still expected (unconfined, made again after the
        # case it did not serve: pool.py).
        waiting = await wait_for_async(lambda: standbys(cases), 10, "the last guess")
        await cases.prepare([])  # none is: it goes, and its folder
        folders = cases.place.folders.root
        gone = (lambda: not standbys(cases) and not list(folders.iterdir()), 10, "none left")
        await wait_for_async(*gone)
        return seen, waiting

    try:
        (cold, *prepared), waiting = asyncio.run(scenario())
    finally:
        cases.close()
    assert cold[0].split() == ["0", "1", "2"]
    for case in prepared:
        assert case[:2] == cold[:2]  # the same descriptors, the same variables
    if mechanism != "none":  # each case reads its own check's files alone
        assert [case[3] for case in [cold, *prepared]] == ["no-poc"] * 3 + ["poc one"] * 2
    folders = [case[2] for case in [cold, *prepared]]
    assert len(set(folders)) == len(folders)  # a folder of its own, each
    assert len(waiting) == 1


def test_a_prepared_sandbox_killed_while_waiting_is_made_again(tmp_path: Path) -> None:
    cases = open_cases(tmp_path, MECHANISMS[-1])
    log = tmp_path / "case.log"

    async def scenario() -> CaseRun:
        await cases.run_command("build", "true", timeout=20, log_path=log)
        await cases.prepare(["build"])
        waiting = await wait_for_async(lambda: standbys(cases), 10, "the prepared sandbox")
        for pid in waiting:  # as the OOM killer, or root outside, could
            os.kill(pid, 9)
        await asyncio.sleep(0.3)
        return await cases.run_command("build", "echo ran", timeout=20, log_path=log)

    try:
        end = asyncio.run(scenario())
    finally:
        cases.close()
    assert (end.exit_code, end.timed_out, log.read_text()) == (0, False, "ran\n")
