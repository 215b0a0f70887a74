"""`ssebench grade --tasks --predictions --out` as an evaluator runs it: several tasks (the C
example among them) and models graded with -j 2, a rerun that grades nothing again, two shards
whose union is the whole run, and bad lines that cost nothing but themselves."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ssebench.core.stopping import SSEBENCH
from ssebench.testing import task_toml
from ssebench.testing.servers import start_child
from ssebench.testing.waiting import wait_for

from .runs import make_tasks, model_counts, reason_ids, run_fields
from .test_grade_patch import tree_hash
from .test_validate import AS_SHIPPED, FIX

pytestmark = pytest.mark.timeout(600)

RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tasks(tmp_path_factory.mktemp("tasks"))


def predictions(tasks: Path, path: Path) -> Path:
    fix, partial = ((tasks / "c-rle" / name).read_text() for name in ("fix.patch", "partial.patch"))
    lines = [
        json.dumps({"task": "c-rle", "patch": fix, "model": "m1"}),
        json.dumps({"task": "c-rle", "patch": partial, "model": "org/m2"}),
        json.dumps({"task": "small-a", "patch": FIX, "model": "m1"}),
        '{"task": "small-a", "patch": ',  # cut short
        json.dumps({"instance_id": "small-a", "model_patch": "", "model_name_or_path": "org/m2"}),
        json.dumps({"task": "small-b", "model": "m1"}),  # no patch
        json.dumps({"task": "small-c", "patch": FIX, "model": "m1"}),  # no such task
        json.dumps({"task": "small-b", "patch": FIX, "model": "org/m2"}),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


ERRORS = [
    {"line": 4, "model": None, "task": None,
     "error": "not valid JSON (Expecting value)"},
    {"line": 6, "model": "m1", "task": "small-b",
     "error": "no patch (`patch` or `model_patch`)"},
    {"line": 7, "model": "m1", "task": "small-c", "error": "unknown task 'small-c': no folder {}"},
]  # fmt: skip


def run(run_cli: RunCli, tasks: Path, preds: Path, out: Path, *args: str) -> dict[str, Any]:
    before = tree_hash(tasks)
    done = run_cli("grade", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(out),
                   *args, timeout=300)  # fmt: skip
    assert tree_hash(tasks) == before
    summary: dict[str, Any] = json.loads(done.stdout)
    assert json.loads(next(out.glob("summary*.json")).read_text()) == summary
    assert done.returncode == (1 if summary["errors"] else 0), done.stderr
    return {"summary": summary, "stderr": done.stderr}


def results(out: Path) -> dict[str, bool]:
    return {
        path.parent.relative_to(out).as_posix(): json.loads(path.read_text())["resolved"]
        for path in sorted(out.glob("*/*/result.json"))
    }


def test_a_run_its_rerun_and_its_shards(run_cli: RunCli, tasks: Path, tmp_path: Path) -> None:
    preds = predictions(tasks, tmp_path / "predictions.jsonl")
    out = tmp_path / "out"
    whole = run(run_cli, tasks, preds, out, "-j", "2")
    errors = [{**e, "error": e["error"].format(tasks / "small-c")} for e in ERRORS]
    assert run_fields(whole["summary"], "predictions", jobs=2) == {
        "total": 8,
        "resolved": 3,
        "unresolved": 2,
        "errors": 3,
        "resolved_ids": ["m1/c-rle", "m1/small-a", "org/m2/small-b"],
        "unresolved_ids": ["org/m2/c-rle", "org/m2/small-a"],
        "error_list": errors,
        "empty_patch_ids": ["org/m2/small-a"],
        "incomplete_ids": [],
        "flagged_ids": [],
        "reason_ids": reason_ids(
            resolved=["m1/c-rle", "m1/small-a", "org/m2/small-b"],
            empty_patch=["org/m2/small-a"],
            poc_still_triggers=["org/m2/c-rle"],
            error=["m1/small-c"],  # and the line without a patch, which names no prediction
        ),
        "models": {
            "m1": model_counts(4, 2, 0, 2, 0, 0, rate=2 / 3, resolved=2, error=2),
            "org/m2": model_counts(3, 1, 2, 0, 1, 0, rate=1 / 3, resolved=1, empty_patch=1,
                                   poc_still_triggers=1),
        },
    }  # fmt: skip
    assert results(out) == {  # the empty patch is not graded: nothing written for it
        "m1/c-rle": True,
        "m1/small-a": True,
        "org__m2/c-rle": False,
        "org__m2/small-b": True,
    }
    assert not (out / "org__m2" / "small-a").exists()
    assert (out / "index.html").is_file()
    lines = whole["stderr"].splitlines()
    assert f"ssebench: [1/8] error: {preds}:4: not valid JSON (Expecting value)" in lines
    assert f"ssebench: [3/8] error: {preds}:6: no patch (`patch` or `model_patch`)" in lines
    tally = "8 predictions: 3 resolved, 2 unresolved, 3 errors"
    assert lines[-1] == f"ssebench: {tally}; 0 reused from an earlier run ({out}/summary.json)"
    # Its files: the patch graded, every case's log, the grade's own stderr.
    folder = out / "org__m2" / "c-rle"
    assert (folder / "patch.diff").read_text() == (tasks / "c-rle" / "partial.patch").read_text()
    assert sorted(p.name for p in (folder / "logs").iterdir()) == [
        "build-0.log", "functional-0.log", "intent-0.log", "pocs-0.log", "pocs-1.log",
    ]  # fmt: skip
    assert "ssebench: PoCs: case 2 of 3 FAILED" in (folder / "grade.log").read_text()
    assert json.loads((folder / "result.json").read_text())["patch"]["applied"] is True

    # A rerun grades nothing again: every verdict is taken as it is, every file left alone.
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("*/*/*") if p.is_file()}
    again = run(run_cli, tasks, preds, out, "-j", "2")
    assert {**again["summary"], "ended": ""} == {**whole["summary"], "ended": ""}
    assert again["stderr"].splitlines()[-1].startswith(f"ssebench: {tally}; 4 reused from an ")
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    graded = [line for line in again["stderr"].splitlines() if ": resolved" in line or
              ": unresolved" in line]  # fmt: skip
    assert len(graded) == 5 and sum(line.endswith("(graded before)") for line in graded) == 4
    assert any(line.endswith("] org/m2/small-a: unresolved (empty patch: not graded)")
               for line in graded)  # fmt: skip

    # Two shards, each in an output of its own: their union is the whole run.
    shards = [
        run(run_cli, tasks, preds, tmp_path / f"shard{i}", "--shard", f"{i}/2") for i in (0, 1)
    ]
    union = results(tmp_path / "shard0") | results(tmp_path / "shard1")
    assert union == results(out)
    assert not set(results(tmp_path / "shard0")) & set(results(tmp_path / "shard1"))
    for key in ("total", "resolved", "unresolved", "errors"):
        assert sum(s["summary"][key] for s in shards) == whole["summary"][key]
    assert sorted(p.name for p in (tmp_path / "shard1").glob("*-of-*")) == [
        "index-1-of-2.html", "summary-1-of-2.json",
    ]  # fmt: skip
    assert [s["summary"]["incomplete_ids"] for s in shards] == [[], []]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ([], "--tasks needs --predictions FILE and --out DIR"),
        (["--predictions", "{p}", "--out", "{o}", "--shard", "2/2"],
         "--shard 2/2: I must be from 0 to N-1 (0/2 to 1/2)"),
        (["--predictions", "{o}/none.jsonl", "--out", "{o}"],
         "{o}/none.jsonl: cannot read the predictions: No such file or directory"),
        (["--predictions", "{p}", "--out", "{o}", "--patch", "x"],
         "--patch and --logs grade one task: use them with --task DIR"),
    ],
)  # fmt: skip
def test_bad_flags_are_one_line(
    run_cli: RunCli, tmp_path: Path, args: list[str], error: str
) -> None:
    preds = tmp_path / "p.jsonl"
    preds.write_text("")
    fill = {"{p}": str(preds), "{o}": str(tmp_path / "out")}

    def filled(text: str) -> str:
        for key, value in fill.items():
            text = text.replace(key, value)
        return text

    done = run_cli("grade", "--tasks", str(tmp_path), *map(filled, args))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"ssebench: error: {filled(error)}\n"


def test_careless_run_inputs_are_one_line(run_cli: RunCli, tasks: Path, tmp_path: Path) -> None:
    """A task folder given as --tasks, a shard numbered from -1, an empty predictions file."""
    preds, out = tmp_path / "p.jsonl", tmp_path / "out"
    preds.write_text("\n")
    args = ["--predictions", str(preds), "--out", str(out)]
    done = run_cli("grade", "--tasks", str(tasks / "small-a"), *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"ssebench: error: {tasks / 'small-a'} is a task folder: give its parent, a folder of "
        "tasks\n"
    )
    done = run_cli("grade", "--tasks", str(tasks), *args, "--shard", "-1/3")
    assert (done.returncode, done.stderr) == (
        2, "ssebench grade: error: --shard -1/3: expected I/N, shard I of N counted from 0 (0/3 "
        "to 2/3)\n"
    )  # fmt: skip
    done = run_cli("grade", "--tasks", str(tasks), *args)
    assert done.returncode == 0
    assert done.stderr.splitlines() == [
        f"ssebench: warning: {preds} holds no predictions",
        f"ssebench: 0 predictions: 0 resolved, 0 unresolved, 0 errors; 0 reused from an "
        f"earlier run ({out}/summary.json)",
    ]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_run_leaves_no_scratch_and_resumes(
    run_cli: RunCli, tmp_path: Path, sig: signal.Signals
) -> None:
    tasks, tmpdir, out = tmp_path / "tasks", tmp_path / "tmpdir", tmp_path / "out"
    (tasks / "slow" / "src").mkdir(parents=True)
    tmpdir.mkdir()
    toml = tasks / "slow" / "task.toml"
    toml.write_text(task_toml({"build": "touch started; sleep 60"}))
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"task": "slow", "patch": AS_SHIPPED, "model": m}) + "\n"
                             for m in "ab"))  # fmt: skip
    args = ["--tasks", str(tasks), "--predictions", str(preds), "--out", str(out), "-j", "2"]
    proc = start_child([*SSEBENCH, "grade", *args], env={**os.environ, "TMPDIR": str(tmpdir)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    started = "ssebench-*/ssebench-grade-*/*/started"
    wait_for(lambda: len(list(tmpdir.glob(started))) >= 2, 60, "2 builds", 0.05, alive=proc)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == (143 if sig == signal.SIGTERM else 130)
    assert stderr.decode().splitlines()[-1] == (
        f"ssebench: stopped: 0 of 2 predictions have a verdict in {out}; run the same command "
        "again to grade the other 2"
    )
    assert list(tmpdir.iterdir()) == []
    assert list(out.glob("*/*/result.json")) == []
    toml.write_text(task_toml({"build": "true"}))
    assert run(run_cli, tasks, preds, out)["summary"]["resolved_ids"] == ["a/slow", "b/slow"]
