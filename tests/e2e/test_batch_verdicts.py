"""A benchmark run's verdicts are never shared or reused wrongly: models whose folders would
collide, a model named like the run's own files, a rerun after a patch, a task or ssebench
changed, a grade that runs over `--timeout`, a model name with a line break, and a run
stopped by Ctrl+C. Each as an evaluator meets it: the real command on small tasks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ssebench.core.stopping import SSEBENCH
from ssebench.testing import task_toml
from ssebench.testing.procs import assert_none_left
from ssebench.testing.servers import start_child
from ssebench.testing.waiting import wait_for

from .test_validate import AS_SHIPPED, FIX, SOUND

pytestmark = pytest.mark.timeout(300)

RunCli = Callable[..., subprocess.CompletedProcess[str]]


def make_tasks(root: Path, *names: str) -> Path:
    for name in names:
        (root / name / "src").mkdir(parents=True)
        (root / name / "src" / "state.txt").write_text("bug\n")
        (root / name / "task.toml").write_text(task_toml(SOUND))
    return root


def write_lines(path: Path, *predictions: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(p) + "\n" for p in predictions))
    return path


def grade(
    run_cli: RunCli, tasks: Path, preds: Path, out: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = run_cli("grade", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(out),
                   *args, timeout=240)  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done, json.loads(done.stdout)


def progress(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("ssebench: [")]


def test_models_whose_folders_collide_never_share_a_verdict(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """`org/agent` and `org__agent` both map to the folder `org__agent` (SWE-bench's rule):
    the second is an error naming the first, and a later run of the second alone on the same
    output is an error too, never the first one's verdict."""
    tasks, out = make_tasks(tmp_path / "tasks", "t"), tmp_path / "out"
    both = write_lines(tmp_path / "both.jsonl",
                       {"task": "t", "model": "org/agent", "patch": FIX},
                       {"task": "t", "model": "org__agent", "patch": AS_SHIPPED})  # fmt: skip
    done, summary = grade(run_cli, tasks, both, out)
    error = ("model 'org__agent' would share the folder org__agent/t with model 'org/agent' "
             "of line 1")  # fmt: skip
    assert (summary["resolved_ids"], summary["error_list"]) == (
        ["org/agent/t"],
        [{"line": 2, "model": "org__agent", "task": "t", "error": error}],
    )
    assert done.returncode == 1
    alone = write_lines(
        tmp_path / "alone.jsonl", {"task": "t", "model": "org__agent", "patch": AS_SHIPPED}
    )
    done, summary = grade(run_cli, tasks, alone, out, "--run-id", "both")  # the same run, on
    error = f"{out}/org__agent/t holds the verdict of model 'org/agent', not of 'org__agent'"
    assert (summary["resolved"], summary["unresolved"], summary["error_list"]) == (
        0,
        0,
        [{"line": 1, "model": "org__agent", "task": "t", "error": error}],
    )
    assert json.loads((out / "org__agent" / "t" / "result.json").read_text())["resolved"]


def test_a_model_named_like_the_summary_is_an_error_and_reruns_work(
    run_cli: RunCli, tmp_path: Path
) -> None:
    tasks, out = make_tasks(tmp_path / "tasks", "t"), tmp_path / "out"
    preds = write_lines(tmp_path / "p.jsonl",
                        {"task": "t", "model": "summary.json", "patch": FIX},
                        {"task": "t", "model": "summary-0-of-2.json", "patch": FIX},
                        {"task": "t", "model": "m", "patch": FIX})  # fmt: skip
    for _ in range(2):
        done, summary = grade(run_cli, tasks, preds, out)
        assert done.returncode == 1
        assert summary["resolved_ids"] == ["m/t"]
        assert [e["error"] for e in summary["error_list"]] == [
            f"model {name!r} cannot name a folder: {name} is named like the run's own files "
            "(*.json, *.html)"
            for name in ("summary.json", "summary-0-of-2.json")
        ]
        assert json.loads((out / "summary.json").read_text()) == summary


def test_a_verdict_is_reused_only_for_the_same_patch_task_and_ssebench(
    run_cli: RunCli, tmp_path: Path
) -> None:
    tasks, out = make_tasks(tmp_path / "tasks", "t"), tmp_path / "out"
    preds = tmp_path / "p.jsonl"
    write_lines(preds, {"task": "t", "model": "m", "patch": AS_SHIPPED})
    done, summary = grade(run_cli, tasks, preds, out)
    assert summary["unresolved_ids"] == ["m/t"]
    recorded = json.loads((out / "m" / "t" / "result.json").read_text())["graded_with"]
    assert sorted(recorded) == [
        "grader", "model", "patch_sha256", "ssebench", "task", "task_sha256"
    ]  # fmt: skip

    write_lines(preds, {"task": "t", "model": "m", "patch": FIX})  # the patch changed: graded
    done, summary = grade(run_cli, tasks, preds, out)
    assert summary["resolved_ids"] == ["m/t"]
    assert progress(done)[0].startswith("ssebench: [1/1] m/t: resolved in ")
    assert progress(done)[0].endswith(" s (graded again: the patch changed)")
    assert done.stderr.splitlines()[-1] == (
        f"ssebench: 1 predictions: 1 resolved, 0 unresolved, 0 errors; 0 reused from an "
        f"earlier run ({out}/summary.json)"
    )

    done, summary = grade(run_cli, tasks, preds, out)  # nothing changed: reused
    assert progress(done) == ["ssebench: [1/1] m/t: resolved (graded before)"]
    assert done.stderr.splitlines()[-1] == (
        f"ssebench: 1 predictions: 1 resolved, 0 unresolved, 0 errors; 1 reused from an "
        f"earlier run ({out}/summary.json)"
    )

    toml = tasks / "t" / "task.toml"  # the task changed: its build now fails
    toml.write_text(toml.read_text().replace("test -f state.txt", "false"))
    done, summary = grade(run_cli, tasks, preds, out)
    assert summary["unresolved_ids"] == ["m/t"]
    assert progress(done)[0].endswith(" s (graded again: the task changed)")

    result = out / "m" / "t" / "result.json"  # graded by another version of ssebench
    data = json.loads(result.read_text())
    data["graded_with"]["ssebench"] = "0.0.1"
    result.write_text(json.dumps(data))
    done, summary = grade(run_cli, tasks, preds, out)
    assert progress(done)[0].endswith(" s (graded again: ssebench 0.0.1 graded it)")

    # Graded unconfined, then asked with isolation: another way of grading, graded again.
    done, summary = grade(run_cli, tasks, preds, out, "--no-isolation")
    assert progress(done)[0].endswith(" s (graded again: it was graded locally, confined)")
    done, summary = grade(run_cli, tasks, preds, out)
    assert progress(done)[0].endswith(" s (graded again: it was graded locally, unconfined)")


def test_a_grade_over_its_timeout_is_an_error_and_its_processes_are_killed(
    run_cli: RunCli, tmp_path: Path
) -> None:
    tasks, out = make_tasks(tmp_path / "tasks", "quick"), tmp_path / "out"
    (tasks / "slow" / "src").mkdir(parents=True)
    hang = "sleep 300 & trap '' TERM INT; sleep 300"  # a child left behind, a shell that stays
    (tasks / "slow" / "task.toml").write_text(task_toml({"build": hang}))
    preds = write_lines(tmp_path / "p.jsonl",
                        {"task": "slow", "model": "m", "patch": AS_SHIPPED},
                        {"task": "quick", "model": "m", "patch": FIX})  # fmt: skip
    started = time.monotonic()
    done, summary = grade(run_cli, tasks, preds, out, "--timeout", "3")
    assert time.monotonic() - started < 60
    assert done.returncode == 1
    assert summary["resolved_ids"] == ["m/quick"]
    error = "no verdict within --timeout 3 s: the grade was stopped, its cases killed"
    assert summary["error_list"] == [{"line": 1, "model": "m", "task": "slow", "error": error}]
    assert (summary["reason_ids"]["timeout"], summary["reason_ids"]["error"]) == (["m/slow"], [])
    lines = [line.split("] ", 1)[1] for line in progress(done)]  # in the order they ended
    assert f"error: {preds}:1: m/slow: {error}" in lines
    assert_none_left((tasks / "slow").resolve())


@pytest.mark.parametrize("value", ["0", "-1", "nan", "soon"])
def test_a_bad_timeout_is_one_line(run_cli: RunCli, tmp_path: Path, value: str) -> None:
    preds = write_lines(tmp_path / "p.jsonl")
    done = run_cli("grade", "--tasks", str(tmp_path), "--predictions", str(preds),
                   "--out", str(tmp_path / "out"), "--timeout", value)  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"ssebench grade: error: argument --timeout: must be a positive number of seconds "
        f"(got {value!r})\n"
    )


def test_a_line_break_in_a_model_name_is_one_error_line(run_cli: RunCli, tmp_path: Path) -> None:
    tasks, out = make_tasks(tmp_path / "tasks", "t"), tmp_path / "out"
    fake = "m\nssebench: [9/9] fake/t: resolved"
    preds = write_lines(tmp_path / "p.jsonl", {"task": "t", "model": fake, "patch": FIX})
    done, summary = grade(run_cli, tasks, preds, out)
    error = f"model {fake!r} holds a control character (a line break, say): it cannot name a folder"
    assert summary["error_list"] == [{"line": 1, "model": fake, "task": "t", "error": error}]
    assert progress(done) == [f"ssebench: [1/1] error: {preds}:1: {error}"]


def test_ctrl_c_says_what_is_kept_and_that_a_rerun_resumes(tmp_path: Path) -> None:
    tasks, out = make_tasks(tmp_path / "tasks", "quick"), tmp_path / "out"
    (tasks / "slow" / "src").mkdir(parents=True)
    (tasks / "slow" / "task.toml").write_text(task_toml({"build": "sleep 300"}))
    preds = write_lines(tmp_path / "p.jsonl",
                        {"task": "quick", "model": "m", "patch": FIX},
                        {"task": "slow", "model": "m", "patch": AS_SHIPPED},
                        {"task": "slow", "model": "n", "patch": AS_SHIPPED})  # fmt: skip
    args = ["--tasks", str(tasks), "--predictions", str(preds), "--out", str(out), "-j", "2"]
    proc = start_child([*SSEBENCH, "grade", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))  # fmt: skip
    try:
        wait_for(
            lambda: (
                (out / "m" / "quick" / "result.json").exists()
                and (out / "m" / "slow" / "grade.log").exists()
            ),
            120,
            "the quick verdict and the slow grade's log",
            0.05,
            alive=proc,
        )
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:  # failed: its grades' `sleep 300` must not outlive the test
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert stderr.splitlines()[-1] == (
        f"ssebench: stopped: 1 of 3 predictions have a verdict in {out}; run the same "
        "command again to grade the other 2"
    )
