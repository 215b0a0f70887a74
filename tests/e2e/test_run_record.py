"""The record of a run, as an evaluator comparing agents reads it (tests/e2e/recordrun.py's run:
every reason, a signal, two models and an agent, trials of 3, costs and tokens, an agent's
test_patch calls from a real `ssebench run --prediction-out`): summary.json whole, each model's
SWE-bench report against SWE-bench's own fields, the calls carried into the verdict, files a web
server's user can read, another run refused the same --out, a rejudge after a judging rule
changed. The page: tests/e2e/test_run_record_page.py."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from ssebench.evaluate.batch import TIMED_OUT
from ssebench.plugins.functional import FUNCTIONAL
from ssebench.testing.servers import clean_env, run_ssebench

from .recordrun import ODD, TASKS, TIMEOUT, RecordRun
from .runs import UNSPENT, model_counts, reason_ids, run_fields

pytestmark = pytest.mark.timeout(900)
# SWE-bench's make_run_report (swebench/harness/reporting.py), its keys in its order.
SWEBENCH_KEYS = [
    "total_instances", "submitted_instances", "completed_instances", "resolved_instances",
    "unresolved_instances", "empty_patch_instances", "error_instances", "completed_ids",
    "incomplete_ids", "empty_patch_ids", "submitted_ids", "resolved_ids", "unresolved_ids",
    "error_ids", "schema_version",
]  # fmt: skip
TRIAL_IDS = [f"{ODD}/{task}/trial-{n}" for task in ("resolved", "poc") for n in (1, 2, 3)]


def spent(predictions: int, total: float, mean: float) -> dict[str, Any]:
    return {"predictions": predictions, "total": total, "mean": mean}


def test_the_summary_says_why_each_ended_and_what_each_model_came_to(
    recorded_run: RecordRun,
) -> None:
    summary = run_fields(recorded_run.summary, "predictions", jobs=2, timeout=TIMEOUT)
    m2 = model_counts(6, 3, 3, 0, 0, 6, rate=0.125, resolved=3, poc_still_triggers=3)
    m2 |= {"trials": 3, "pass_at": pytest.approx({"1": 1 / 8, "2": 5 / 24, "3": 1 / 4}),
           "pass_at_1_sd": pytest.approx(1 / 8)}  # fmt: skip
    agent = model_counts(1, 1, 0, 0, 0, 7, rate=0.125, resolved=1)
    agent |= {"test_patch_calls": spent(1, 3, 3), "input_tokens": spent(1, 1200, 1200),
              "output_tokens": spent(1, 300, 300), "duration_s": spent(1, 61.5, 61.5)}  # fmt: skip
    every = {reason: 1 for reason in ("resolved", "empty_patch", "patch_does_not_apply",
             "build_failed", "poc_still_triggers", "intent_failed", "functional_failed",
             "timeout", "error")}  # fmt: skip
    m1 = model_counts(9, 1, 6, 2, 1, 0, rate=0.125, **every)
    m1 |= {"cost": {**spent(3, 0.75, 0.25), "per_resolved": 0.75},
           "input_tokens": spent(2, 1500, 750), "output_tokens": spent(2, 300, 150),
           "duration_s": spent(1, 30.5, 30.5)}  # fmt: skip
    tasks = recorded_run.tasks
    assert summary == {
        "total": 16,
        "resolved": 5,
        "unresolved": 9,
        "errors": 2,
        "resolved_ids": ["m1/resolved", TRIAL_IDS[0], TRIAL_IDS[2], TRIAL_IDS[5],
                         "agent/resolved"],
        "unresolved_ids": [*(f"m1/{t}" for t in TASKS[1:7]), TRIAL_IDS[1], *TRIAL_IDS[3:5]],
        "error_list": [
            {"line": 8, "model": "m1", "task": "slow", "error": TIMED_OUT.format(TIMEOUT)},
            {"line": 9, "model": "m1", "task": "zz",
             "error": f"unknown task 'zz': no folder {tasks / 'zz'}"},
        ],
        "empty_patch_ids": ["m1/empty"],
        "incomplete_ids": [
            *(f"{ODD}/{t}" for t in ("apply", "build", "empty", "functional", "intent", "slow")),
            *(f"agent/{t}" for t in ("apply", "build", "empty", "functional", "intent", "poc",
                                     "slow")),
        ],
        "flagged_ids": ["m1/resolved"],
        "reason_ids": reason_ids(
            resolved=["m1/resolved", TRIAL_IDS[0], TRIAL_IDS[2], TRIAL_IDS[5], "agent/resolved"],
            empty_patch=["m1/empty"],
            patch_does_not_apply=["m1/apply"],
            build_failed=["m1/build"],
            poc_still_triggers=["m1/poc", TRIAL_IDS[1], *TRIAL_IDS[3:5]],
            intent_failed=["m1/intent"],
            functional_failed=["m1/functional"],
            timeout=["m1/slow"],
            error=["m1/zz"],
        ),
        "models": {"m1": m1, ODD: m2, "agent": agent},
    }  # fmt: skip
    assert m2["cost"] == {**UNSPENT, "per_resolved": None}  # no line of it said


def report(out: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / name).read_text())
    assert list(data) == SWEBENCH_KEYS  # SWE-bench's fields, in its order, and no other
    return data


def test_each_models_swebench_report_is_swebenchs(recorded_run: RecordRun) -> None:
    out = recorded_run.out
    folder = "<i>org<__i>__m2"
    assert sorted(p.name for p in out.glob("*.json")) == sorted([
        "agent.predictions.json", "m1.predictions.json", "run.json", "summary.json",
        *(f"{folder}.predictions-trial-{n}.json" for n in (1, 2, 3)),
    ])  # fmt: skip
    assert report(out, "m1.predictions.json") == {
        "total_instances": 8,
        "submitted_instances": 9,  # zz, not a task of the dataset, is only submitted
        "completed_instances": 6,
        "resolved_instances": 1,
        "unresolved_instances": 5,
        "empty_patch_instances": 1,
        "error_instances": 1,
        "completed_ids": ["apply", "build", "functional", "intent", "poc", "resolved"],
        "incomplete_ids": [],
        "empty_patch_ids": ["empty"],
        "submitted_ids": ["apply", "build", "empty", "functional", "intent", "poc", "resolved",
                          "slow", "zz"],
        "resolved_ids": ["resolved"],
        "unresolved_ids": ["apply", "build", "functional", "intent", "poc"],
        "error_ids": ["slow"],
        "schema_version": 2,
    }  # fmt: skip
    others = ["apply", "build", "empty", "functional", "intent", "slow"]
    for trial, resolved in ((1, ["resolved"]), (2, []), (3, ["poc", "resolved"])):
        each = report(out, f"{folder}.predictions-trial-{trial}.json")
        assert (each["submitted_ids"], each["completed_ids"]) == (["poc", "resolved"],) * 2
        assert each["resolved_ids"] == resolved
        assert each["unresolved_ids"] == sorted({"poc", "resolved"} - set(resolved))
        assert each["incomplete_ids"] == others
    agent = report(out, "agent.predictions.json")
    assert (agent["resolved_ids"], agent["incomplete_ids"]) == (["resolved"], [*others[:5], "poc",
                                                                              "slow"])  # fmt: skip


def test_the_agents_calls_go_from_run_to_the_verdict(recorded_run: RecordRun) -> None:
    """Each call as the report told the agent: level 2 withholds the PoCs and the intent
    tests, so no call names them; the tokens and time are its dialog file's."""
    line = recorded_run.agent_line
    assert list(line) == ["task", "model", "patch", "test_patch_calls", "tokens", "duration_s"]
    calls = line["test_patch_calls"]
    assert [(c["level"], c["headline"]) for c in calls] == [
        (2, f"test_patch result: FAILED. {FUNCTIONAL.failure_reason}"),
        (2, "test_patch result: every check that ran passed."),
        (2, "test_patch result: every check that ran passed."),
    ]  # fmt: skip
    assert [c["checks"] for c in calls] == [
        [{"name": "build", "status": "passed", "detail": None},
         {"name": "functional tests", "status": "failed", "detail": None}],
        *[[{"name": "build", "status": "passed", "detail": None},
           {"name": "functional tests", "status": "passed", "detail": None}]] * 2,
    ]  # fmt: skip
    assert [c["started"] for c in calls] == sorted(c["started"] for c in calls)
    assert all(0 < c["seconds"] < 120 for c in calls)
    assert (line["tokens"], line["duration_s"]) == ({"input": 1200, "output": 300}, 61.5)
    result = json.loads((recorded_run.out / "agent" / "resolved" / "result.json").read_text())
    assert result["agent_run"] == {"test_patch_calls": calls, "cost": None,
                                   "tokens": line["tokens"], "duration_s": 61.5}  # fmt: skip


def test_every_file_of_the_run_follows_the_umask(recorded_run: RecordRun) -> None:
    """Graded under umask 022: a web server's user can read the page, the reports, every
    verdict and log, and enter every folder."""
    found = {path: stat.S_IMODE(path.stat().st_mode) for path in recorded_run.out.rglob("*")}
    assert {mode for path, mode in found.items() if path.is_dir()} == {0o755}
    assert {mode for path, mode in found.items() if path.is_file()} == {0o644}
    assert len([p for p in found if p.name == "result.json"]) == 13  # every graded one


def test_another_run_into_the_same_out_is_refused(recorded_run: RecordRun, tmp_path: Path) -> None:
    out = recorded_run.out
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"task": "resolved", "model": "m9", "patch": ""}) + "\n")
    done = run_ssebench("grade", "--tasks", str(recorded_run.tasks), "--predictions", str(other),
                        "--out", str(out), env=clean_env(tmp_path))  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"ssebench: error: {out} holds the run 'predictions' (run.json), not 'other' (--run-id, "
        "by default the predictions file's stem): give this run an --out of its own, or "
        "--run-id predictions to go on with that one\n"
    )
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_a_rejudge_after_a_judging_rule_changed(recorded_run: RecordRun, tmp_path: Path) -> None:
    """The poc task now judges its PoC by exit status alone (`sanitizer = false`): its PoC
    exits 1, no fatal signal, so it no longer triggers, and those verdicts now fail on their
    intent tests. Nothing is built or run: no grade writes its grade.log again."""
    tasks, out = tmp_path / "tasks", tmp_path / "out"
    shutil.copytree(recorded_run.tasks, tasks)
    shutil.copytree(recorded_run.out, out)
    toml = tasks / "poc" / "task.toml"
    toml.write_text(toml.read_text().replace("[checks.pocs]\n", "[checks.pocs]\n"
                                             "triggered_if = { sanitizer = false }\n"))  # fmt: skip
    logs = {p: p.stat().st_mtime_ns for p in out.rglob("grade.log")}
    results = {p: p.read_bytes() for p in out.rglob("result.json")}
    done = run_ssebench("grade", "--tasks", str(tasks), "--predictions",
                        str(recorded_run.predictions), "--out", str(out), "--rejudge",
                        env=clean_env(tmp_path))  # fmt: skip
    assert done.returncode == 1, done.stderr  # the two errors stay errors
    lines = [line.split("] ", 1)[1] for line in done.stderr.splitlines() if "] " in line]
    was = "(rejudged: was unresolved (poc-still-triggers))"
    assert f"m1/poc: unresolved (intent-failed) {was}" in lines
    assert f"{ODD}/poc/trial-1: unresolved (intent-failed) {was}" in lines
    assert f"{ODD}/resolved/trial-2: unresolved (poc-still-triggers) (rejudged: unchanged)" in lines
    assert "m1/resolved: resolved (rejudged: unchanged); flagged: autoload-file" in lines
    assert f"error: {recorded_run.predictions}:8: m1/slow: no verdict to rejudge: grade it " \
        "first (without --rejudge)" in lines  # fmt: skip
    assert done.stderr.splitlines()[-1] == (
        "ssebench: 16 predictions: 5 resolved, 9 unresolved, 2 errors; 13 rejudged from their "
        f"saved logs, 3 changed ({out}/summary.json)"
    )
    summary = json.loads(done.stdout)
    assert summary["reason_ids"]["intent-failed"] == [
        "m1/poc", "m1/intent", f"{ODD}/poc/trial-1", f"{ODD}/poc/trial-2"
    ]  # fmt: skip
    assert {p: p.stat().st_mtime_ns for p in out.rglob("grade.log")} == logs
    changed = sorted(p.relative_to(out).as_posix() for p in results
                     if p.read_bytes() != results[p])  # fmt: skip
    assert changed == [f"<i>org<__i>__m2/poc/trial-{n}/result.json" for n in (1, 2)] + [
        "m1/poc/result.json"
    ]
    verdict = json.loads((out / "m1" / "poc" / "result.json").read_text())
    assert (verdict["resolved"], verdict["reason"]) == (False, "intent-failed")
    assert [c["status"] for c in verdict["checks"]] == ["passed", "passed", "failed", "passed"]
