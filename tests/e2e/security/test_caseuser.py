"""The routes of the case-user issue (22), each as an attack through the real command line with
every mechanism here, and the positive controls that show the runner copy and the case user
still let an honest task work.

- A build that locks the PoCs away (chmod 0) cannot grade an unfixed tree resolved.
- The build at grading reads no PoC; the evaluator's credentials reach no case; `pass_env` does.
- A case over its disk limit fails; a machine short of disk is an error, never a verdict.
- /tmp and /var/tmp are writable, and nothing a case leaves there reaches a later one.
- A second call rebuilds only what changed; a deleted file is gone; nothing lands in the tree.
- A venv behind a task folder locked to root works.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from e2e.security.services import c_example, statuses, task_hashes
from e2e.security.test_attacks import mechanisms
from ssebench.core.daemons.door import ServiceConfig, choose_isolation, load_task
from ssebench.core.daemons.inprocess import local_daemon
from ssebench.core.registry import build_registry

pytestmark = [pytest.mark.security, pytest.mark.timeout(300)]

RunCli = Callable[..., subprocess.CompletedProcess[str]]
ROOT = os.geteuid() == 0
ADD = "--- /dev/null\n+++ b/NOTES\n@@ -0,0 +1 @@\n+a note\n"  # a patch that fixes nothing


def graded(run_cli: RunCli, task: Path, mechanism: str, tmp: Path, **env: str) -> dict[str, object]:
    patch = tmp / "add.patch"
    patch.write_text(ADD)
    how = ["--no-isolation"] if mechanism == "none" else ["--isolation", mechanism]
    done = run_cli("grade", "--task", str(task), "--patch", str(patch), *how,
                   "--quiet", "--logs", str(tmp / "logs"), env={**os.environ, **env})  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return dict(json.loads(done.stdout))


@pytest.mark.skipif(not ROOT, reason="a non-root daemon's cases own its files (as it does)")
@pytest.mark.parametrize("mechanism", mechanisms())
def test_a_build_that_locks_the_pocs_away_cannot_grade_an_unfixed_tree_resolved(
    tmp_path: Path, mechanism: str, run_cli: RunCli
) -> None:
    """Red team 12-04: a root case chmod 0'd the PoC folder; every PoC then could not open its
    input, "no longer triggered", and the unfixed tree was resolved for good."""
    lock = "\t-chmod 0 $(SSE_TASK_DIR)/pocs/* $(SSE_TASK_DIR)/pocs $(SSE_TASK_DIR)\n"
    task = c_example(tmp_path, lock)
    before = task_hashes(task)
    modes = {p: p.stat().st_mode for p in (task, task / "pocs")}
    answer = graded(run_cli, task, mechanism, tmp_path)
    assert (answer["resolved"], statuses(answer)["pocs"]) == (False, "failed")
    assert task_hashes(task) == before
    assert {p: p.stat().st_mode for p in modes} == modes


def test_without_isolation_the_lock_does_change_the_task_folder(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """The control: unconfined, the build's chmod reaches the task folder (and is undone here)."""
    task = c_example(tmp_path, "\t-chmod 0 $(SSE_TASK_DIR)/pocs\n")
    try:
        patch = tmp_path / "add.patch"
        patch.write_text(ADD)
        run_cli("grade", "--task", str(task), "--patch", str(patch), "--no-isolation", "--quiet")
        assert (task / "pocs").stat().st_mode & 0o777 == 0
    finally:
        (task / "pocs").chmod(0o755)


@pytest.mark.parametrize("mechanism", mechanisms())
def test_the_build_at_grading_reads_no_poc_and_no_credential(
    tmp_path: Path, mechanism: str, run_cli: RunCli
) -> None:
    """The evaluator's level runs every check, but each reads its own files: a build that read
    the PoCs could compile a binary that recognises them. And a case's environment is an
    allow-list: the evaluator's credentials stay the evaluator's; `pass_env` names what may."""
    peek = "\t-cat $(SSE_TASK_DIR)/pocs/marker.txt; env\n"
    task = c_example(tmp_path, peek)
    (task / "pocs" / "marker.txt").write_text("MARK-POC-SEEN\n")
    toml = (task / "task.toml").read_text()
    (task / "task.toml").write_text(
        toml.replace('source = "src"', 'source = "src"\npass_env = ["CARGO_HOME"]')
    )
    secrets = {"AWS_SECRET_ACCESS_KEY": "MARK-AWS", "HF_TOKEN": "MARK-HF", "CARGO_HOME": "/c"}
    graded(run_cli, task, mechanism, tmp_path, **secrets)
    build = (tmp_path / "logs" / "build-0.log").read_text()
    assert tuple(m for m in ("MARK-POC-SEEN", "MARK-AWS", "MARK-HF") if m not in build) == (
        "MARK-POC-SEEN",
        "MARK-AWS",
        "MARK-HF",
    )
    assert "CARGO_HOME=/c\n" in build


def small_task(root: Path, toml: str) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "task.toml").write_text('source = "src"\n' + toml)
    return root


@pytest.mark.parametrize("mechanism", mechanisms())
def test_a_case_over_its_disk_limit_fails_and_says_so(
    tmp_path: Path, mechanism: str, run_cli: RunCli
) -> None:
    fill = "head -c 60M /dev/zero > big; sleep 3"
    task = small_task(
        tmp_path / "task",
        f"limits = {{ disk_mb = 20 }}\n[checks.functional]\ncases = ['{fill}', 'true']\n",
    )
    answer = graded(run_cli, task, mechanism, tmp_path)
    check = next(c for c in answer["checks"] if c["key"] == "functional")  # type: ignore[union-attr]
    assert [c["passed"] for c in check["cases"]] == [False, True]  # type: ignore[index]
    log = (tmp_path / "logs" / "functional-0.log").read_text()
    assert log.endswith(
        "[ssebench: this case went over its limit of 20 MB of disk and was stopped]\n"
    )


@pytest.mark.skipif(not ROOT, reason="mounts a small file system of its own")
@pytest.mark.parametrize("mechanism", mechanisms())
def test_a_machine_short_of_disk_is_an_error_never_a_verdict(
    tmp_path: Path, mechanism: str, run_cli: RunCli
) -> None:
    """Red team 12-04: a build filled the volume of the grading copies; the honest fix graded
    beside it failed its tests with I/O errors and was saved as unresolved. Here the volume is
    a 300 MB one of the test's own, which the case fills past ssebench's floor (128 MiB)."""
    volume = tmp_path / "volume"
    volume.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300m", "tmpfs", str(volume)]).returncode:
        pytest.skip("no tmpfs can be mounted here (a container without CAP_SYS_ADMIN)")
    try:
        task = small_task(
            tmp_path / "task", "[checks.build]\nrun = 'head -c 250M /dev/zero > big; sleep 3'\n"
        )
        patch = tmp_path / "add.patch"
        patch.write_text(ADD)
        env = {**os.environ, "TMPDIR": str(volume)}
        done = run_cli("grade", "--task", str(task), "--patch", str(patch), "--isolation",
                       mechanism, "--quiet", env=env)  # fmt: skip
        assert (done.returncode, done.stdout) == (3, "")
        assert "MiB free, under ssebench's floor of 128 MiB: free some space and grade again" in (
            done.stderr
        )
    finally:
        subprocess.run(["umount", "-l", str(volume)], check=True)


@pytest.mark.parametrize("mechanism", mechanisms())
def test_tmp_is_writable_and_nothing_left_there_reaches_a_later_case(
    tmp_path: Path, mechanism: str, run_cli: RunCli
) -> None:
    if mechanism == "landlock" and not ROOT:
        pytest.skip("a non-root daemon's cases keep to their TMPDIR under Landlock")
    mark = f"ssebench-left-{os.getpid()}-{mechanism}"
    task = small_task(
        tmp_path / "task",
        "[checks.build]\nrun = 'sh leave.sh'\n[checks.functional]\nrun = 'sh find.sh'\n",
    )
    (task / "src" / "leave.sh").write_text(  # glibc's tmpfile() writes /tmp whatever TMPDIR says
        f"echo x > /tmp/{mark} && echo y > /var/tmp/{mark} && "
        "python3 -c 'import tempfile; tempfile.TemporaryFile(dir=\"/tmp\")'\n"
    )
    (task / "src" / "find.sh").write_text(f"test ! -e /tmp/{mark} && test ! -e /var/tmp/{mark}\n")
    answer = graded(run_cli, task, mechanism, tmp_path)
    assert statuses(answer) == {
        "build": "passed",
        "pocs": "passed",
        "intent": "passed",
        "functional": "passed",
    }
    assert not os.path.exists(f"/tmp/{mark}") and not os.path.exists(f"/var/tmp/{mark}")


MAKEFILE = "all: prog\nprog: a.o b.o\n\tcc -o prog a.o b.o\n%.o: %.c\n\tcc -c $<\n"


@pytest.mark.parametrize("mechanism", mechanisms())
def test_a_second_call_rebuilds_only_what_changed_on_the_daemons_copy(
    tmp_path: Path, mechanism: str
) -> None:
    task = small_task(tmp_path / "task", "[checks.build]\nrun = 'make; ls'\n")
    tree = task / "src"
    (tree / "Makefile").write_text(MAKEFILE)
    (tree / "a.c").write_text("int main(void) { return 0; }\n")
    (tree / "b.c").write_text("int b;\n")
    (tree / "gone.txt").write_text("the agent deletes it\n")
    registry = build_registry()

    async def calls() -> list[str]:
        logs = []
        mechanism_ = choose_isolation(mechanism)
        config = ServiceConfig(load_task(task, registry.checks), registry, 3, mechanism_)
        async with local_daemon(config) as daemon:
            for change in (None, "b.c", "gone.txt"):
                if change == "b.c":
                    (tree / "b.c").write_text("int b = 1;\n")
                elif change == "gone.txt":
                    (tree / "gone.txt").unlink()
                case = await daemon.run_and_judge(daemon.check("build"), 0)
                logs.append(daemon.log_path(case.log_id).read_text())
        return logs

    first, second, third = asyncio.run(calls())
    assert first.splitlines()[:3] == ["cc -c a.c", "cc -c b.c", "cc -o prog a.o b.o"]
    assert second.splitlines()[:2] == ["cc -c b.c", "cc -o prog a.o b.o"]
    assert "gone.txt" in second and "gone.txt" not in third
    assert sorted(p.name for p in tree.iterdir()) == ["Makefile", "a.c", "b.c"]  # no output


@pytest.mark.skipif(not ROOT, reason="locks the task folder to root")
@pytest.mark.parametrize("mechanism", mechanisms())
def test_a_venv_behind_a_task_folder_locked_to_root_works(
    tmp_path: Path, mechanism: str, run_cli: RunCli
) -> None:
    top = Path(tempfile.mkdtemp(prefix="ssebench-test-", dir="/tmp"))
    try:
        task = small_task(
            top / "task", 'files = ["venv"]\n[checks.build]\nrun = "$SSE_TASK_DIR/venv/bin/tool"\n'
        )
        (task / "venv" / "bin").mkdir(parents=True)
        (task / "venv" / "bin" / "python").symlink_to("/usr/bin/python3")
        tool = task / "venv" / "bin" / "tool"
        tool.write_text(f"#!{task}/venv/bin/python\nprint(6 * 7)\n")  # as pip writes them
        tool.chmod(0o755)
        subprocess.run(["chown", "-R", "1000:1000", str(task / "src")], check=True)
        task.chmod(0o700)
        done = run_cli("check", "--task", str(task), "--difficulty", "3", "--isolation", mechanism)
        assert done.returncode == 0, done.stdout + done.stderr
        assert oct(task.stat().st_mode & 0o777) == "0o700"
    finally:
        subprocess.run(["rm", "-rf", str(top)], check=True)


def test_a_poc_input_the_cases_user_cannot_read_is_an_error_never_a_pass(tmp_path: Path) -> None:
    """A PoC that cannot open its input would "no longer trigger" and pass: the case is an
    internal failure instead, naming the file. A non-root daemon (its cases run as itself) and
    an input it cannot read: as root, the test runs ssebench as uid 65534; as another user, on
    an input of its own of mode 0."""
    ssebench = Path(sys.executable).with_name("ssebench")
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if ROOT else []
    python = os.path.realpath(sys.executable)
    if subprocess.run([*as_nobody, "test", "-x", python], capture_output=True).returncode:
        pytest.skip(f"{sys.executable} cannot be run by uid 65534 here")
    top = Path(tempfile.mkdtemp(prefix="ssebench-test-", dir="/tmp"))
    try:
        top.chmod(0o755)
        task = small_task(
            top / "task",
            '[checks.pocs]\nfiles = ["pocs"]\ncases = ["cat $SSE_TASK_DIR/pocs/crash.bin"]\n',
        )
        (task / "pocs").mkdir()
        (task / "pocs" / "crash.bin").write_text("the input\n")
        (task / "pocs" / "crash.bin").chmod(0o600 if ROOT else 0)
        done = subprocess.run(
            [*as_nobody, str(ssebench), "check", "--task", str(task), "--difficulty", "0",
             "--quiet"],
            capture_output=True, text=True, env={**os.environ, "TMPDIR": "/tmp"},
        )  # fmt: skip
        assert (done.returncode, done.stdout) == (
            3,
            "An internal testing failure occurred. Your patch is not responsible for this "
            "failure.\n",
        )
        assert f"cannot read {task / 'pocs' / 'crash.bin'}" in done.stderr
    finally:
        subprocess.run(["rm", "-rf", str(top)], check=True)
