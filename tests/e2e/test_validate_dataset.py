"""`ssebench validate --tasks DIR --out OUT`: every task of a dataset validated as `validate`
validates one, with its fix (`fix.patch` in its folder, or `--fix-name`): a table for people,
JSON for scripts, each task's verdict in OUT; a rerun reuses what was validated from the same
task and fix and validates the rest; a task with no fix is an error, tried again next time.
And the flags of the evaluator's new modes refused in one line where they mean nothing."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ssebench.testing import task_toml

from .test_validate import FIX, SOUND, TRIGGERS

pytestmark = pytest.mark.timeout(300)

RunCli = Callable[..., subprocess.CompletedProcess[str]]


def _task(root: Path, name: str, checks: dict[str, Any], fix: str | None = FIX) -> Path:
    folder = root / name
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "state.txt").write_text("bug\n")
    (folder / "task.toml").write_text(task_toml(checks))
    if fix is not None:
        (folder / "fix.patch").write_text(fix)
    return folder


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    tasks = tmp_path / "tasks"
    _task(tasks, "a-sound", SOUND)
    _task(tasks, "b-unsound", {**SOUND, "pocs": [TRIGGERS, "echo clean"]})
    _task(tasks, "c-no-fix", SOUND, fix=None)
    (tasks / "not-a-task").mkdir()  # no task.toml: not one of the dataset's tasks
    return tasks


def _row(task: str, verdict: str, problems: tuple[str, ...] = (), error: str | None = None
         ) -> dict[str, Any]:  # fmt: skip
    return {"task": task, "verdict": verdict, "reused": False, "problems": list(problems),
            "flaky": [], "warnings": [], "error": error}  # fmt: skip


def test_a_dataset_is_validated_task_by_task_and_a_rerun_reuses(
    run_cli: RunCli, dataset: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    args = ["validate", "--tasks", str(dataset), "--out", str(out)]
    first = run_cli(*args, "-j", "2", "--json")
    assert first.returncode == 1, first.stderr
    unsound = "PoCs case 1: passed as shipped; it must fail there (show the bug)"
    no_fix = f"no fix: {dataset / 'c-no-fix' / 'fix.patch'}: No such file or directory "
    no_fix += "(--fix-name names another file)"
    rows = [_row("a-sound", "sound"), _row("b-unsound", "not sound", (unsound,)),
            _row("c-no-fix", "error", error=no_fix)]  # fmt: skip
    summary = {
        "total": 3, "sound": 1, "not_sound": 1, "errors": 1, "sound_ids": ["a-sound"],
        "not_sound_ids": ["b-unsound"], "error_ids": ["c-no-fix"], "tasks": rows,
    }  # fmt: skip
    assert json.loads(first.stdout) == summary
    saved = json.loads((out / "a-sound" / "validation.json").read_text())
    assert (saved["sound"], sorted(saved["validated_with"])) == (
        True, ["fix_sha256", "runs", "ssebench", "task", "task_sha256", "validator"],
    )  # fmt: skip
    assert sorted(p.name for p in (out / "a-sound" / "logs").iterdir()) == ["run-1"]
    # The unsound task's fix changes: it alone is validated again.
    (dataset / "b-unsound" / "fix.patch").write_text(FIX + "\n")
    again = run_cli(*args)
    assert (again.returncode, again.stdout) == (
        1,
        f"ssebench validate: 3 tasks in {dataset} (1 run on each tree)\n\n"
        "task       verdict    why\n"
        "a-sound    sound\n"
        f"b-unsound  NOT sound  {unsound}\n"
        f"c-no-fix   error      {no_fix}\n\n"
        "The dataset is NOT sound: 1 of 3 tasks are sound.\n",
    )
    lines = again.stderr.splitlines()
    assert [line.split(" in ")[0] for line in lines] == [
        "ssebench: [1/3] a-sound: sound (reused)",
        "ssebench: [2/3] b-unsound: not sound",
        f"ssebench: [3/3] c-no-fix: error: {no_fix}",
    ]


def test_fix_name_names_each_tasks_fix(run_cli: RunCli, dataset: Path, tmp_path: Path) -> None:
    (dataset / "c-no-fix" / "gold.diff").write_text(FIX)
    (dataset / "a-sound" / "gold.diff").write_text(FIX)
    (dataset / "b-unsound" / "gold.diff").write_text(FIX)
    out = tmp_path / "out"
    done = run_cli("validate", "--tasks", str(dataset), "--out", str(out), "--fix-name",
                   "gold.diff", "--json")  # fmt: skip
    assert json.loads(done.stdout)["error_ids"] == []


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["validate", "--tasks", "T"], "--tasks needs --out DIR, where each task's verdict is "
         "kept"),
        (["validate", "--tasks", "T", "--out", "O", "--fix", "f"],
         "--fix validates one task: use it with --task DIR"),
        (["validate", "--tasks", "T", "--out", "O", "--fix-name", "a/b"],
         "--fix-name 'a/b': must be a file's name in each task folder"),
        (["validate", "--task", "T", "--fix", "f", "-j", "2"],
         "-j validates a dataset: use it with --tasks DIR"),
        (["validate", "--task", "T"], "validate needs --task DIR and --fix FILE (or --tasks DIR)"),
        (["grade", "--task", "T", "--patch", "p", "--fresh-container"],
         "--fresh-container grades the task's tree where it is, in a fresh container of its "
         "image (--backend docker starts one): use it with --task DIR alone"),
        (["grade", "--task", "T", "--every-case"],
         "--every-case grades a patch: use it with --patch FILE"),
    ],
)  # fmt: skip
def test_flags_where_they_mean_nothing_are_one_line(
    run_cli: RunCli, tmp_path: Path, args: list[str], line: str
) -> None:
    tasks = tmp_path / "T"
    tasks.mkdir()
    done = run_cli(*[str(tasks) if a == "T" else a for a in args])
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"ssebench: error: {line}\n")


def test_fresh_container_never_takes_a_tree_that_is_no_mount_of_its_own(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """`grade --fresh-container` hands the tree to the case user: not this machine's tree."""
    task = _task(tmp_path, "task", SOUND)
    before = (task / "src").stat()
    done = run_cli("grade", "--task", str(task), "--fresh-container")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr in (
        "ssebench: error: --fresh-container: this is no container (no /.dockerenv)\n",
        f"ssebench: error: --fresh-container: the task's tree {task / 'src'} is no mount of its "
        "own, as --backend docker mounts the tree it grades: this grade would take it over\n",
    )
    after = (task / "src").stat()
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)
