"""Rigging the grade: the C example's unfixed tree must stay unresolved whatever its build does.

The rigs of the issue, on a copy of examples/c-rle: a build that overwrites the PoC inputs with
benign ones and the intent script with `exit 0`, and that leaves behind a process killing every
PoC run (SIGKILL reads as "no longer triggers"), in the same grade or in an earlier run. And the
positive controls: the PoCs see their inputs and trigger, and with fix.patch everything passes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from e2e.security.services import EXAMPLE, c_example, statuses, task_hashes
from e2e.security.test_attacks import kill_leftovers, leftovers, mechanisms

pytestmark = [pytest.mark.security, pytest.mark.timeout(300)]

# Make recipe lines, errors ignored: benign PoC inputs (an empty stream), a passing intent
# script, and a leftover that SIGKILLs every PoC run: every process whose program is the rle
# just built, found under /proc by the leftover itself (by pid, never a name pattern).
RIG = (
    "\t-for f in $(SSE_TASK_DIR)/pocs/*.bin; do printf 'RLE1\\000\\000\\000\\000' > $$f; done\n"
    "\t-printf 'exit 0\\n' > $(SSE_TASK_DIR)/intent/test_bounds.sh\n"
    "\t-setsid -f env -u SSE_CASE_ID sh -c 'while :; do for p in /proc/[0-9]*; do "
    "[ $$p/exe -ef $$PWD/rle ] && kill -9 $${p#/proc/}; done; sleep 0.01; done' kill-the-poc\n"
)


def rigged_copy(tmp: Path) -> Path:
    return c_example(tmp, RIG)


def grade(task: Path, mechanism: str, run_cli: object) -> tuple[int, dict[str, object]]:
    done = run_cli("grade", "--task", str(task), "--isolation", mechanism, "--quiet")  # type: ignore[operator]
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("mechanism", mechanisms())
def test_a_rigging_build_cannot_grade_an_unfixed_tree_resolved(
    tmp_path: Path, mechanism: str, run_cli: object
) -> None:
    task = rigged_copy(tmp_path)
    before = task_hashes(task)
    try:
        code, answer = grade(task, mechanism, run_cli)
        assert code == 1
        assert answer["resolved"] is False
        assert statuses(answer) == {
            "build": "passed",
            "pocs": "failed",
            "intent": "failed",
            "functional": "passed",
        }
        assert task_hashes(task) == before
        assert leftovers() == []
    finally:
        kill_leftovers()


@pytest.mark.parametrize("mechanism", mechanisms())
def test_a_leftover_from_an_earlier_run_cannot_rig_a_later_grade(
    tmp_path: Path, mechanism: str, run_cli: object
) -> None:
    task = rigged_copy(tmp_path)
    try:
        earlier = run_cli(
            "check", "--task", str(task), "--difficulty", "3", "--isolation", mechanism
        )  # type: ignore[operator]
        assert earlier.returncode == 0, earlier.stderr
        assert leftovers() == []
        code, answer = grade(task, mechanism, run_cli)
        assert (code, answer["resolved"], statuses(answer)["pocs"]) == (1, False, "failed")
    finally:
        kill_leftovers()


@pytest.mark.parametrize("mechanism", mechanisms())
def test_positive_controls_pocs_see_their_inputs_and_the_fix_passes(
    tmp_path: Path, mechanism: str, run_cli: object
) -> None:
    task = tmp_path / "c-rle"
    shutil.copytree(EXAMPLE, task)
    unfixed = run_cli("check", "--task", str(task), "--difficulty", "0", "--isolation", mechanism)  # type: ignore[operator]
    assert unfixed.returncode == 1
    assert "- PoCs: FAILED (passed 0 of 3; stopped at the first that still triggers the bug)" in (
        unfixed.stdout
    )
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in unfixed.stdout
    patch = (EXAMPLE / "fix.patch").read_bytes()
    subprocess.run(["patch", "-s", "-p1", "-d", str(task / "src")], input=patch, check=True)
    fixed = run_cli("check", "--task", str(task), "--difficulty", "0", "--isolation", mechanism)  # type: ignore[operator]
    assert (fixed.returncode, fixed.stdout) == (
        0,
        "test_patch result: every check passed.\n\nChecks:\n- build: passed\n"
        "- PoCs: passed (3 of 3)\n- intent tests: passed\n"
        "- functional tests: passed (covered by the intent tests)\n",
    )


def test_an_undeclared_task_path_is_a_one_line_task_error(tmp_path: Path, run_cli: object) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "pocs").mkdir()
    (tmp_path / "pocs" / "x.bin").write_bytes(b"x")
    toml = tmp_path / "task.toml"
    toml.write_text(
        'source = "src"\n[checks.pocs]\ncases = ["true", "cat $SSE_TASK_DIR/pocs/x.bin"]\n'
    )
    done = run_cli("check", "--task", str(tmp_path))  # type: ignore[operator]
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"ssebench: error: {toml}: checks.pocs: case 1 names $SSE_TASK_DIR/pocs/x.bin, which "
        "is in neither this check's files nor the top-level files\n",
    )


def test_without_isolation_the_rig_works(tmp_path: Path, run_cli: object) -> None:
    """The control: unconfined, the rigged build does make the unfixed tree resolved."""
    task = rigged_copy(tmp_path)
    try:
        done = run_cli("grade", "--task", str(task), "--no-isolation", "--quiet")  # type: ignore[operator]
        assert (done.returncode, json.loads(done.stdout)["resolved"]) == (0, True)
    finally:
        kill_leftovers()


def test_a_task_path_named_by_its_real_path_must_be_declared_too(
    tmp_path: Path, run_cli: object
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "pocs").mkdir()
    (tmp_path / "pocs" / "x.bin").write_bytes(b"x")
    toml = tmp_path / "task.toml"
    toml.write_text(f'source = "src"\n[checks.pocs]\ncases = ["cat {tmp_path}/pocs/x.bin"]\n')
    done = run_cli("check", "--task", str(tmp_path))  # type: ignore[operator]
    assert (done.returncode, done.stderr) == (
        2,
        f"ssebench: error: {toml}: checks.pocs: case 0 names {tmp_path}/pocs/x.bin, which is "
        "in neither this check's files nor the top-level files\n",
    )
    toml.write_text(
        f'source = "src"\n[checks.pocs]\nfiles = ["pocs"]\ncases = ["cat {tmp_path}/pocs/x.bin",'
        f' "make -C {tmp_path}/src"]\n'
    )
    assert run_cli("check", "--task", str(tmp_path), "--quiet").returncode == 0  # type: ignore[operator]
