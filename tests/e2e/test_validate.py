"""`ssebench validate` as a task author runs it: the examples are sound (this is how CI
validates them), and small tasks that are not say why: a PoC that never triggers, a fix that
fails a functional test, a fix that does not apply, a test that passes every other run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ssebench.core.cli.isolation import UNCONFINED_WARNING
from ssebench.testing import TaskHandle

from .test_grade_patch import BUILD_OUTPUTS, EXAMPLES, tree_hash

pytestmark = pytest.mark.timeout(600)

RunCli = Callable[..., subprocess.CompletedProcess[str]]
TRIGGERS = (
    "grep -q fixed state.txt || { echo 'ERROR: AddressSanitizer: heap-buffer-overflow'; exit 1; }"
)
FIX = "--- a/state.txt\n+++ b/state.txt\n@@ -1 +1 @@\n-bug\n+fixed\n"
# Graded, unlike an empty patch, and changing nothing a check reads: a file of its own.
AS_SHIPPED = "--- /dev/null\n+++ b/graded.txt\n@@ -0,0 +1 @@\n+graded\n"
SOUND = {
    "build": "test -f state.txt",
    "pocs": [TRIGGERS, TRIGGERS],
    "intent": "grep -q fixed state.txt",
    "functional": "test -s state.txt",
}


def validate(run_cli: RunCli, task: Path, fix: Path, *args: str,
             env: Mapping[str, str] | None = None) -> tuple[int, str]:  # fmt: skip
    """Run validate; the task's tree must be as it was, and no scratch copy left."""
    tmpdir = task.parent / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    before = tree_hash(task)
    done = run_cli("validate", "--task", str(task), "--fix", str(fix), "--quiet", *args,
                   env={**(env or os.environ), "TMPDIR": str(tmpdir)})  # fmt: skip
    assert tree_hash(task) == before
    assert list(tmpdir.iterdir()) == []
    warned = f"ssebench: warning: {UNCONFINED_WARNING}\n" if "--no-isolation" in args else ""
    assert done.stderr == warned, done.stderr
    return done.returncode, done.stdout


def example(name: str, tmp_path: Path) -> Path:
    task = tmp_path / name
    shutil.copytree(EXAMPLES / name, task, ignore=BUILD_OUTPUTS)  # never built in examples/
    return task


def test_the_c_example_is_sound(run_cli: RunCli, tmp_path: Path) -> None:
    if shutil.which("cc") is None or shutil.which("make") is None:
        pytest.skip("c-rle needs a C compiler and make")
    task = example("c-rle", tmp_path)
    assert validate(run_cli, task, task / "fix.patch", "--runs", "2") == (
        0,
        "ssebench validate: 2 runs on each tree\n"
        "\n"
        "check             as shipped  with the fix\n"
        "build             passed      passed\n"
        "PoCs case 0       FAILED      passed\n"
        "PoCs case 1       FAILED      passed\n"
        "PoCs case 2       FAILED      passed\n"
        "intent tests      FAILED      passed\n"
        "functional tests  passed      passed\n"
        "\n"
        "The task is sound.\n",
    )
    code, text = validate(run_cli, task, task / "partial.patch")
    assert code == 1
    assert text.endswith(
        "Problems:\n"
        "- PoCs case 1: FAILED with the fix; every check must pass with it\n"
        "- PoCs case 2: FAILED with the fix; every check must pass with it\n"
        "- intent tests: FAILED with the fix; every check must pass with it\n"
        "\n"
        "The task is NOT sound.\n"
    )


def case(check: str, index: int, shipped: list[bool], fixed: list[bool]) -> dict[str, Any]:
    names = {"build": "build", "pocs": "PoCs", "intent": "intent tests"}
    name = names.get(check, "functional tests")
    return {"check": check, "name": name, "index": index, "as_shipped": shipped, "with_fix": fixed}


def test_the_python_example_is_sound(run_cli: RunCli, tmp_path: Path) -> None:
    task = example("py-config", tmp_path)
    code, text = validate(run_cli, task, task / "fix.patch", "--json")
    assert (code, json.loads(text)) == (
        0,
        {
            "sound": True,
            "runs": 1,
            "fix": {"applied": True, "error": None},
            "problems": [],
            "flaky": [],
            "warnings": [],
            "cases": [
                case("build", 0, [True], [True]),
                case("pocs", 0, [False], [True]),
                case("pocs", 1, [False], [True]),
                case("intent", 0, [False], [True]),
                case("functional", 0, [True], [True]),
            ],
        },
    )


def small_task(
    make: Callable[..., TaskHandle], env: dict[str, str] | None = None, **checks: Any
) -> tuple[Path, Path]:
    task = make({**SOUND, **checks}, files={"state.txt": "bug\n"}, env=env).path
    (task / "fix.patch").write_text(FIX)
    return task, task / "fix.patch"


def verdict(run_cli: RunCli, task: Path, fix: Path, *args: str, **kw: Any) -> dict[str, Any]:
    code, text = validate(run_cli, task, fix, "--json", *args, **kw)
    answer: dict[str, Any] = json.loads(text)
    assert code == (0 if answer["sound"] else 1)
    return {k: answer[k] for k in ("sound", "problems", "flaky", "warnings")}


def test_a_small_sound_task(run_cli: RunCli, ssebench_task: Callable[..., TaskHandle]) -> None:
    task, fix = small_task(ssebench_task)
    assert verdict(run_cli, task, fix, "--runs", "3") == {
        "sound": True, "problems": [], "flaky": [], "warnings": [],
    }  # fmt: skip


def test_a_poc_that_never_triggers(
    run_cli: RunCli, ssebench_task: Callable[..., TaskHandle]
) -> None:
    task, fix = small_task(ssebench_task, pocs=[TRIGGERS, "echo clean", TRIGGERS])
    assert verdict(run_cli, task, fix) == {
        "sound": False,
        "problems": ["PoCs case 1: passed as shipped; it must fail there (show the bug)"],
        "flaky": [],
        "warnings": [],
    }


def test_a_fix_that_fails_a_functional_test(
    run_cli: RunCli, ssebench_task: Callable[..., TaskHandle]
) -> None:
    task, fix = small_task(ssebench_task, functional="grep -q bug state.txt", intent="true")
    assert verdict(run_cli, task, fix) == {
        "sound": False,
        "problems": ["functional tests: FAILED with the fix; every check must pass with it"],
        "flaky": [],
        "warnings": ["intent tests: passed as shipped; they should fail without the fix"],
    }


def test_a_fix_that_does_not_apply(
    run_cli: RunCli, ssebench_task: Callable[..., TaskHandle]
) -> None:
    task, fix = small_task(ssebench_task)
    fix.write_text(FIX.replace("-bug", "-other"))
    assert verdict(run_cli, task, fix)["problems"] == [
        "the fix does not apply: patch failed: state.txt:1; state.txt: patch does not apply"
    ]


def test_a_test_that_passes_every_other_run_is_flaky(
    run_cli: RunCli, ssebench_task: Callable[..., TaskHandle], tmp_path: Path
) -> None:
    # Each run runs the tests twice (as shipped, with the fix): passing on the first two of
    # every four calls, the test passes in runs 1, 3, ... and fails in runs 2, 4, ...
    counter = tmp_path / "calls"
    counter.write_text("0")
    flaky = 'n=$(cat "$FLAKY"); echo $((n + 1)) > "$FLAKY"; [ $(( n / 2 % 2 )) = 0 ]'
    task, fix = small_task(ssebench_task, {"FLAKY": str(counter)}, functional=flaky)
    # The counter lies outside the tree: a confined case could not keep it from run to run.
    assert verdict(run_cli, task, fix, "--runs", "2", "--no-isolation") == {
        "sound": False,
        "problems": [],
        "flaky": [
            "functional tests: flaky as shipped (passed 1 of 2 runs)",
            "functional tests: flaky with the fix (passed 1 of 2 runs)",
        ],
        "warnings": [],
    }
    assert counter.read_text() == "4\n"


def test_bad_input_is_one_line(
    run_cli: RunCli, ssebench_task: Callable[..., TaskHandle], tmp_path: Path
) -> None:
    done = run_cli("validate", "--task", str(tmp_path), "--fix", "x.patch")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"ssebench: error: {tmp_path / 'task.toml'}: no such task file\n"
    task, fix = small_task(ssebench_task)
    for args, error in (
        (["--fix", str(fix), "--logs", "/etc/passwd"], "--logs /etc/passwd: not a folder"),
        (
            ["--fix", "/dev/zero"],
            "/dev/zero: cannot read the patch: over 64 MiB, too large for a diff",
        ),
    ):
        done = run_cli("validate", "--task", str(task), *args)
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == f"ssebench: error: {error}\n"


def test_logs_keep_every_case_of_every_run_on_each_tree(
    run_cli: RunCli, ssebench_task: Callable[..., TaskHandle], tmp_path: Path
) -> None:
    """A task author sees why a case failed: each case's output, named by run, tree and case."""
    task, fix = small_task(ssebench_task, functional="echo functional run; test -s state.txt")
    logs = tmp_path / "logs"
    assert verdict(run_cli, task, fix, "--runs", "2", "--logs", str(logs))["sound"] is True
    cases = ["build-0", "functional-0", "intent-0", "pocs-0", "pocs-1"]
    assert sorted(p.relative_to(logs).as_posix() for p in logs.rglob("*.log")) == [
        f"run-{run}/{tree}/{case}.log"
        for run in (1, 2)
        for tree in ("as-shipped", "with-the-fix")
        for case in cases
    ]
    shipped, fixed = logs / "run-2" / "as-shipped", logs / "run-2" / "with-the-fix"
    assert (shipped / "pocs-1.log").read_text() == "ERROR: AddressSanitizer: heap-buffer-overflow\n"
    assert (fixed / "pocs-1.log").read_text() == ""
    assert (fixed / "functional-0.log").read_text() == "functional run\n"
