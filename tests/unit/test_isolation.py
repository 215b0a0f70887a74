"""Isolation's parts, each alone: the policy a level gives, the case environment, the allow-list
Landlock gets, and what a confined case can and cannot do, with every mechanism this machine has.

The runs are real: a supervisor process, the case under bubblewrap or Landlock, the processes
it leaves behind looked up in /proc afterwards.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import time
from pathlib import Path

import pytest

from ssebench.core.case import CaseRun
from ssebench.daemon.cases import Cases, case_environment, policy_for
from ssebench.daemon.guard import make_folder, private_parent, remove_folder
from ssebench.daemon.isolation import (
    Grant,
    IsolationError,
    Mechanism,
    available,
    choose,
    system_paths,
    visible_roots,
)
from ssebench.daemon.task import load_task
from ssebench.plugins.build import BUILD
from ssebench.plugins.intent import INTENT
from ssebench.plugins.poc import POCS

MECHANISMS = ["none", *available()]
CONFINED = [name for name in MECHANISMS if name != "none"]


def write_task(root: Path, toml: str) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "pocs").mkdir()
    (root / "pocs" / "one.bin").write_text("poc one\n")
    (root / "intent").mkdir()
    (root / "intent" / "t.sh").write_text("exit 0\n")
    (root / "task.toml").write_text('source = "src"\n' + toml)
    return root


TOML = """files = ["intent/t.sh"]
env = { GREETING = "hi", HOME_TOO = "x" }
[checks.build]
run = "true"
[checks.pocs]
files = ["pocs"]
cases = ["cat $SSE_TASK_DIR/pocs/one.bin"]
"""


def test_a_level_reads_the_top_level_files_and_those_of_its_checks(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, TOML), [BUILD, POCS, INTENT])
    assert task.granted([BUILD, POCS]) == (tmp_path / "intent" / "t.sh", tmp_path / "pocs")
    assert task.granted([BUILD]) == (tmp_path / "intent" / "t.sh",)
    policy = policy_for(task, [BUILD], hidden=[Path("/x/logs")])
    script = str(tmp_path / "intent" / "t.sh")
    assert policy.readable == (Grant(script, script),)
    assert policy.system == system_paths()
    assert "/usr" in policy.system and "/tmp" not in policy.system
    assert policy.writable == (str(tmp_path / "src"),)  # each case's own folder comes with it
    assert policy.hidden == tuple(sorted({str(tmp_path), "/x/logs", str(private_parent())}))


def test_a_granted_link_is_readable_by_its_name_and_where_it_points(tmp_path: Path) -> None:
    write_task(tmp_path / "task", TOML)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "task" / "linked").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "task" / "task.toml").write_text(
        'source = "src"\nfiles = ["linked"]\nreadable = ["/usr/share"]\n'
    )
    task = load_task(tmp_path / "task", [BUILD])
    policy = policy_for(task, [BUILD], hidden=[])
    assert policy.readable == (
        Grant(str(tmp_path / "task" / "linked"), str(tmp_path / "elsewhere")),
        Grant("/usr/share", "/usr/share"),
    )


def test_the_case_environment(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, TOML), [BUILD, POCS, INTENT])
    environ = {
        "PATH": "/root/.pyenv/shims:/usr/local/bin:/bin:/work/.venv/bin:/usr/bin",
        **{"SSE_DIFFICULTY": "2", "MCP_LOG_DIR": "/l", "SSE_X": "y", "A": "b"},
    }
    roots = ("/usr", "/bin")  # PATH keeps only what the case can reach, in its order
    assert case_environment(environ, task, tmp_path / "case", roots) == {
        "PATH": "/usr/local/bin:/bin:/usr/bin",
        "A": "b",
        "TMPDIR": str(tmp_path / "case" / "tmp"),
        "HOME": str(tmp_path / "case" / "home"),
        "GREETING": "hi",
        "HOME_TOO": "x",
        "SSE_TASK_DIR": str(tmp_path),
        "SSE_SOURCE_DIR": str(tmp_path / "src"),
    }


def test_visible_roots_split_only_along_hidden_paths(tmp_path: Path) -> None:
    for name in ("a/x", "a/y", "b", "c/d/e", "c/d/f", "c/g"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "b")
    hidden = (str(tmp_path / "a" / "x"), str(tmp_path / "c" / "d" / "e"))
    assert list(visible_roots(hidden, str(tmp_path))) == [
        str(tmp_path / "a" / "y"),
        str(tmp_path / "b"),
        str(tmp_path / "c" / "d" / "f"),
        str(tmp_path / "c" / "g"),
    ]


def test_an_unknown_or_impossible_mechanism_is_refused() -> None:
    with pytest.raises(IsolationError, match="unknown isolation mechanism 'chroot'"):
        choose("chroot")
    assert choose("none") == Mechanism("none", "cases run unconfined")


def run_case(tmp: Path, mechanism: str, command: str, **options: object) -> tuple[CaseRun, str]:
    task = load_task(write_task(tmp, TOML), [BUILD, POCS, INTENT])
    cases = Cases(task, [BUILD], mechanism=choose(mechanism), **options)  # type: ignore[arg-type]
    log = tmp / "case.log"
    try:
        run = asyncio.run(cases.run(command, timeout=20, log_path=log))
    finally:
        cases.close()
    return run, log.read_text(errors="replace")


ESCAPES = (
    "setsid -f env -u SSE_CASE_ID sleep 310; "
    "(sleep 311 & echo $! >> pids) ; "
    "nohup bash -c 'exec -a renamed sleep 312' >/dev/null 2>&1 & echo $! >> pids; "
    "setsid -f bash -c 'echo $$ >> pids; while :; do (sleep 313 &); sleep 0.01; done'; "
    "sleep 0.5; pgrep -f 'sleep 31[0-3]' >> pids; echo started"
)


def _running(pattern: re.Pattern[str]) -> list[str]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, UnicodeDecodeError):
            continue
        if pattern.search(cmdline) and _alive(int(entry)):
            found.append(cmdline)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in "ZX"


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_nothing_a_case_started_outlives_it(tmp_path: Path, mechanism: str) -> None:
    run, log = run_case(tmp_path, mechanism, ESCAPES)
    assert (run.exit_code, log) == (0, "started\n")
    pids = [int(line) for line in (tmp_path / "src" / "pids").read_text().split()]
    if mechanism == "bubblewrap":
        pids = []  # the pids it wrote are its own namespace's: look for the commands instead
    time.sleep(0.2)
    assert [pid for pid in pids if _alive(pid)] == []
    assert _running(re.compile(r"sleep 31[0-3]|renamed")) == []


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_log_is_cut_at_its_limit_and_says_so(tmp_path: Path, mechanism: str) -> None:
    run, log = run_case(tmp_path, mechanism, "yes | head -c 5000; echo done >&2", log_limit=1000)
    assert (run.exit_code, run.dropped) == (0, 4005)
    assert log == "y\n" * 500 + (
        "\n[ssebench: this case printed more than its log's limit of 1000 bytes; "
        "the 4005 bytes after it were dropped]\n"
    )


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_case_printing_without_end_fills_no_disk(tmp_path: Path, mechanism: str) -> None:
    task = load_task(write_task(tmp_path, TOML), [BUILD, POCS, INTENT])
    cases = Cases(task, [BUILD], mechanism=choose(mechanism), log_limit=1 << 20)
    try:
        run = asyncio.run(cases.run("yes", timeout=2, log_path=tmp_path / "log"))
    finally:
        cases.close()
    assert run.timed_out
    size = (tmp_path / "log").stat().st_size
    assert (1 << 20) < size < (1 << 20) + 200


@pytest.mark.parametrize("mechanism", CONFINED)
def test_what_a_confined_case_can_and_cannot_do(tmp_path: Path, mechanism: str) -> None:
    script = (
        'for p in "$SSE_TASK_DIR/task.toml" "$SSE_TASK_DIR/intent/t.sh" /etc/hostname; do '
        'cat "$p" >/dev/null 2>&1 && echo "read $p" || echo "no $p"; done; '
        '{ echo x > "$SSE_TASK_DIR/intent/t.sh"; } 2>/dev/null && echo wrote '
        "|| echo no-write-task; "
        'echo x > built && echo wrote-source; echo x > "$TMPDIR/t" && echo wrote-tmpdir; '
        'echo x > "$HOME/h" && echo wrote-home; touch /usr/x 2>/dev/null || echo no-write-usr; '
        f"kill -0 {os.getpid()} 2>/dev/null || echo no-signal; "
        "(exec 3<>/dev/tcp/127.0.0.1/22) 2>/dev/null && echo tcp || echo no-tcp; "
        'echo "$GREETING ${SSE_DIFFICULTY-unset}"'
    )
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        _, log = run_case(tmp_path, mechanism, script.replace("22", str(port)))
    task = tmp_path
    assert log.splitlines() == [
        f"no {task}/task.toml",
        f"read {task}/intent/t.sh",
        "read /etc/hostname",
        "no-write-task",
        "wrote-source",
        "wrote-tmpdir",
        "wrote-home",
        "no-write-usr",
        "no-signal",
        "no-tcp",
        "hi unset",
    ]
    assert (task / "intent" / "t.sh").read_text() == "exit 0\n"


def test_a_supervisor_killed_from_outside_fails_its_case_and_is_started_again(
    tmp_path: Path,
) -> None:
    task = load_task(write_task(tmp_path, TOML), [BUILD, POCS, INTENT])
    cases = Cases(task, [BUILD], mechanism=choose("none"))

    async def scenario() -> list[str]:
        seen = []
        first = await cases.run("echo one", timeout=10, log_path=tmp_path / "1.log")
        seen.append(f"first {first.exit_code}")
        running = asyncio.create_task(cases.run("sleep 30", timeout=60, log_path=tmp_path / "2"))
        await asyncio.sleep(0.5)
        assert cases.runner._proc is not None
        cases.runner._proc.kill()  # as root outside the case could
        try:
            await running
        except Exception as exc:
            seen.append(f"{type(exc).__name__}: {exc}")
        again = await cases.run("echo three", timeout=10, log_path=tmp_path / "3.log")
        seen.append(f"again {again.exit_code} {(tmp_path / '3.log').read_text().strip()}")
        return seen

    try:
        assert asyncio.run(scenario()) == [
            "first 0",
            "RunnerError: the case supervisor died",
            "again 0 three",
        ]
    finally:
        cases.close()
        # Its case outlived it: a case cannot kill the supervisor, only a privileged process
        # outside could (the test, here), and such a process is beyond what ssebench confines.
        os.system("pkill -9 -x -f 'sleep 30'")


def test_where_no_mechanism_works_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A machine without bubblewrap and without Landlock cannot be made here; fake its answers.
    monkeypatch.setattr("shutil.which", lambda name: None)
    monkeypatch.setattr("ssebench.daemon.isolation.landlock_abi", lambda: 0)
    with pytest.raises(IsolationError) as caught:
        choose("auto")
    assert str(caught.value) == (
        "no isolation mechanism works here: install bubblewrap (Debian: apt-get install "
        "bubblewrap) where user namespaces are allowed, or run on Linux 6.12 or newer with "
        "Landlock enabled (ABI 6); or pass --no-isolation to run the agent's code unconfined"
    )
    with pytest.raises(
        IsolationError,
        match=r"^Landlock cannot isolate cases here: ABI 6 or newer is needed \(none\)$",
    ):
        choose("landlock")
    with pytest.raises(IsolationError, match=r"^bubblewrap cannot isolate cases here: bwrap"):
        choose("bubblewrap")


def test_no_isolation_warns_at_start(tmp_path: Path, run_cli: object) -> None:
    write_task(tmp_path, '[checks.build]\nrun = "echo built"\n')
    done = run_cli("check", "--task", str(tmp_path), "--no-isolation", "--quiet")  # type: ignore[operator]
    assert (done.returncode, done.stderr) == (
        0,
        "ssebench: warning: isolation is off (--no-isolation): the agent's build, tests and "
        "PoCs can read every file this user can, the task's withheld files included, and "
        "write the task's files\n",
    )


@pytest.mark.parametrize("mechanism", CONFINED)
def test_another_daemons_folders_stay_out_of_reach_even_made_later(
    tmp_path: Path, mechanism: str
) -> None:
    task = load_task(write_task(tmp_path, TOML), [BUILD, POCS, INTENT])
    cases = Cases(task, [BUILD], mechanism=choose(mechanism))
    other = make_folder("ssebench-logs-")  # another daemon's spool, made after ours
    try:
        (other / "log").write_text("MARK-OTHER-SPOOL\n")
        log = tmp_path / "case.log"
        asyncio.run(cases.run(f"cat {other}/log; ls {other.parent}", timeout=10, log_path=log))
        assert "MARK-OTHER-SPOOL" not in log.read_text()
        assert other.name not in log.read_text().splitlines()  # not in the listing
    finally:
        cases.close()
        remove_folder(other)
    assert not private_parent().exists() or list(private_parent().iterdir()) != [other]
