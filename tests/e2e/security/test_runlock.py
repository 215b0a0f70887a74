"""`ssebench run`, the container entrypoint, and a withheld file outside the task folder (an
imported ARVO task's /tmp/poc: a file of its image, readable by every user there, where the
task folder's lock does not reach). As root, run moves it out of every other user's sight
before the agent starts, says so in one line, and puts it back exactly as it was when it ends,
however it ends (after a SIGKILL, at the next start); whatever the agent planted at its path
meanwhile never takes its place. Without root, one warning line names it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from e2e.security.outside import AGENT_UID, NOTHING, PROBE, SEEN, Outside, make_outside
from e2e.security.test_attacks import mechanisms
from ssebench.daemon.confine.procfs import processes
from ssebench.daemon.confine.stash import Stash
from ssebench.testing.ports import free_port
from ssebench.testing.servers import SSEBENCH, clean_env, run_ssebench, start_child

pytestmark = [pytest.mark.security, pytest.mark.timeout(300)]

ROOT = os.geteuid() == 0
AS_AGENT = ["setpriv", f"--reuid={AGENT_UID}", f"--regid={AGENT_UID}", "--clear-groups"]
as_root = pytest.mark.skipif(not ROOT, reason="only root moves another user's file away")
# The agent: waits for a signal and exits with a status that names it (at once: a signal that
# comes while "ready" is still being written must not meet a print of its own).
WAITER = """
import os, signal, sys, time
for sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(sig, lambda n, f: os._exit(40 + n))
print("ready", flush=True)
time.sleep(60)
sys.exit(1)
"""


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[Outside]:
    made = make_outside(tmp_path / "task")
    yield made
    made.remove()


def agent_probe(where: Path, poc: Outside) -> list[str]:
    """The probe as the agent's own shell runs it: as uid 1000, from a folder of its own."""
    folder = where / "agent"
    folder.mkdir(mode=0o755)
    (folder / "probe.py").write_text(PROBE)
    (folder / "name.txt").write_text(f"{poc.path}\n")
    return [*AS_AGENT, "/usr/bin/python3", str(folder / "probe.py"), str(folder / "name.txt")]


def ports() -> list[str]:
    return ["--port", str(free_port()), "--daemon-port", str(free_port())]


def locked(poc: Outside) -> str:
    what = "locked 1 withheld file outside the task folder until the run ends"
    return f"ssebench: run: {what}: {poc.path}\n"


def run(
    tmp: Path, poc: Outside, command: list[str], *flags: str
) -> subprocess.CompletedProcess[str]:
    args = ["--task", str(poc.task), "--difficulty", "2", *flags, *ports(), "--", *command]
    return run_ssebench("run", *args, env=clean_env(tmp), timeout=120)


@as_root
@pytest.mark.parametrize("isolation", [["--isolation", "auto"], ["--no-isolation"]])
def test_run_keeps_it_from_the_agent_until_the_run_ends(
    tmp_path: Path, passable_tmp: Path, outside: Outside, isolation: list[str]
) -> None:
    probe = agent_probe(passable_tmp, outside)
    before = outside.state()
    seen = subprocess.run(probe, capture_output=True, text=True)  # the control: it is there
    assert seen.stdout.startswith(SEEN), seen.stderr
    done = run(tmp_path, outside, probe, *isolation)
    assert (done.returncode, done.stdout) == (0, NOTHING), done.stderr
    assert done.stderr.count(locked(outside)) == 1
    assert outside.state() == before


@as_root
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_puts_it_back(
    tmp_path: Path, outside: Outside, sig: signal.Signals
) -> None:
    before = outside.state()
    proc = start_run(tmp_path, outside, [sys.executable, "-c", WAITER])
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        assert outside.state() == (None,)
        proc.send_signal(sig)
        assert proc.wait(60) == 40 + sig
    finally:
        proc.kill()
        _, stderr = proc.communicate()
    assert stderr.count(locked(outside)) == 1
    assert outside.state() == before


def start_run(tmp: Path, poc: Outside, command: list[str], *flags: str) -> subprocess.Popen[str]:
    args = ["run", "--task", str(poc.task), "--difficulty", "2", *flags, *ports()]
    return start_child([*SSEBENCH, *args, "--", *command], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                       env=clean_env(tmp))  # fmt: skip


@as_root
def test_after_run_is_killed_the_next_start_puts_it_back(tmp_path: Path, outside: Outside) -> None:
    """SIGKILL leaves run no way out: the file stays away, with its journal, until the next
    `ssebench run` (or any ssebench given the task) starts and puts it back."""
    before = outside.state()
    proc = start_run(tmp_path, outside, [sys.executable, "-c", WAITER], "--no-isolation")
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        started = [each.pid for each in processes() if each.ppid == proc.pid]  # server, CMD
        proc.kill()
        proc.wait(10)
        for pid in started:
            os.kill(pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate()
    assert outside.state() == (None,)
    done = run(tmp_path, outside, ["true"], "--no-isolation")
    assert done.returncode == 0, done.stderr
    assert (
        f"ssebench: warning: put back {outside.path}, which an ssebench process that was killed "
        "had kept away\n"
    ) in done.stderr
    assert outside.state() == before


@as_root
def test_what_the_agent_plants_meanwhile_never_takes_its_place(
    tmp_path: Path, outside: Outside
) -> None:
    before = outside.state()
    plant = [*AS_AGENT, "sh", "-c", f"echo the agent\\'s input > {outside.path}"]
    done = run(tmp_path, outside, plant, "--no-isolation")
    assert done.returncode == 0, done.stderr
    assert (
        f"ssebench: warning: run: {outside.path}: removed what was put there while it was away\n"
        in done.stderr
    )
    assert outside.state() == before


def test_without_root_run_names_each_withheld_file_every_user_can_read(
    passable_tmp: Path, run_cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    """As root, the test runs ssebench as the agent's user (a non-root daemon: its own
    folders, a task folder it may read)."""
    as_agent = AS_AGENT if ROOT else []
    python = os.path.realpath(sys.executable)
    if subprocess.run([*as_agent, "test", "-x", python], capture_output=True).returncode:
        pytest.skip(f"{sys.executable} cannot be run by uid {AGENT_UID} here")
    poc = make_outside(passable_tmp / "task")
    try:
        poc.task.chmod(0o755)
        home = passable_tmp / "home"
        (home / "tmp").mkdir(parents=True)
        for folder in (home, home / "tmp"):
            if ROOT:
                shutil.chown(folder, AGENT_UID, AGENT_UID)
        args = ["run", "--task", str(poc.task), "--difficulty", "2", "--no-isolation", *ports()]
        done = subprocess.run([*as_agent, *SSEBENCH, *args, "--", "true"], capture_output=True,
                              text=True, env=clean_env(home), timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        warnings = [line for line in done.stderr.splitlines() if line.startswith("ssebench: w")]
        assert warnings == [
            "ssebench: warning: isolation is off (--no-isolation): the agent's build, tests and "
            "PoCs can read every file this user can, the task's withheld files included, and "
            "write the task's files",
            "ssebench: warning: run: every user can read these withheld files outside the task "
            f"folder while the agent runs (run as root to lock them): {poc.path}",
        ]
    finally:
        poc.remove()


@as_root
def test_a_withheld_file_that_cannot_move_is_one_line_and_no_agent_runs(
    tmp_path: Path, run_cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    """A file on another file system than TMPDIR's, where the stash lies, cannot be renamed
    there: `run` says so and never starts the agent, a daemon that would need it moved under
    Landlock refuses to start, each in one line (exit status 2)."""
    volume = tmp_path / "volume"
    volume.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(volume)]).returncode:
        pytest.skip("no tmpfs can be mounted here (a container without CAP_SYS_ADMIN)")
    try:
        task = tmp_path / "task"
        (task / "src").mkdir(parents=True)
        (volume / "poc").write_text("the PoC\n")
        (task / "task.toml").write_text(
            f'source = "src"\n[checks.build]\nrun = "true"\n[checks.pocs]\n'
            f'files = ["{volume}/poc"]\ncases = ["cat {volume}/poc"]\n'
        )
        env = clean_env(tmp_path)
        stash = f"{env['TMPDIR']}/ssebench-0/stash"
        done = run_cli("run", "--task", str(task), "--difficulty", "2", *ports(), "--",
                       "echo", "the agent ran", env=env)  # fmt: skip
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr.splitlines()[-1] == (
            f"ssebench: error: run: cannot lock a withheld file away from the agent: cannot move "
            f"{volume}/poc into {stash} (it lies on another file system: set TMPDIR to a folder "
            "on its own)"
        )
        if "landlock" in mechanisms():
            done = run_cli("check", "--task", str(task), "--isolation", "landlock", env=env)
            assert (done.returncode, done.stderr.splitlines()[-1]) == (
                2,
                f"ssebench: error: {volume}/poc: withheld from some cases, it lies on another "
                f"file system than {env['TMPDIR']}/ssebench-0, where ssebench would move it out "
                "of their sight: set TMPDIR to a folder on its file system",
            )
        assert (volume / "poc").read_text() == "the PoC\n"
    finally:
        subprocess.run(["umount", "-l", str(volume)], check=True)


@as_root
def test_a_file_another_ssebench_keeps_away_already_is_locked_too(
    tmp_path: Path, passable_tmp: Path, outside: Outside
) -> None:
    """The server's case supervisor may move it first (Landlock, a level that withholds it):
    run holds it as well, and says so, so that it stays away should the server die."""
    before = outside.state()
    server = Stash(f"{clean_env(tmp_path)['TMPDIR']}/ssebench-0/stash")  # as the server's
    assert server.hold(str(outside.path))
    try:
        done = run(tmp_path, outside, agent_probe(passable_tmp, outside), "--no-isolation")
        assert (done.returncode, done.stdout) == (0, NOTHING), done.stderr
        assert done.stderr.count(locked(outside)) == 1
        assert outside.state() == (None,)  # the other holder keeps it away still
    finally:
        server.close()
    assert outside.state() == before
