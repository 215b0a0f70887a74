"""summary.json as evaluators compare runs (evaluate/runreport.py): the run, the counts, which
predictions they are, empty patches, tasks a model has no prediction for, flagged verdicts, why
each ended, and each model's counts with its rate over every task of `--tasks`, pass@k over
trials and what its runs spent; a shard's and the merge's; SWE-bench's report per model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ssebench.evaluate.agentrun import AgentRun
from ssebench.evaluate.batch import ERROR, RESOLVED, TIMED_OUT, UNRESOLVED, Graded
from ssebench.evaluate.predictions import BadLine, Prediction, in_shard
from ssebench.evaluate.reasons import REASONS
from ssebench.evaluate.runrecord import RunFields
from ssebench.evaluate.runreport import summarize, task_ids
from ssebench.evaluate.runshapes import RunSettings
from ssebench.evaluate.swebench import swebench_reports
from ssebench.evaluate.verdicts import dump

TASKS = ["a", "b", "c", "d"]
SETTINGS = RunSettings(ssebench="0.1.0", backend="local", isolation="landlock", timeout=None,
                       jobs=2)  # fmt: skip
RUN = RunFields("r1", "2026-01-02T03:04:05+00:00", "2026-01-02T03:14:05+00:00", SETTINGS)
CALL = {"started": "2026-01-02T03:05:00.000+00:00", "seconds": 1.5, "level": 2,
        "headline": "test_patch result: FAILED. x", "checks": []}  # fmt: skip


def prediction(
    number: int, task: str, patch: str = "diff", model: str = "m", trial: int | None = None,
    **agent: Any,
) -> Prediction:  # fmt: skip
    record = AgentRun.model_validate(agent)
    return Prediction(number, number + 1, task, model, patch, trial, record)


GRADED = [
    Graded(
        prediction(
            0, "a", cost=0.5, tokens={"input": 100, "output": 10}, test_patch_calls=[CALL, CALL]
        ),
        RESOLVED,
        reason="resolved",
    ),
    Graded(
        prediction(1, "b", model="org/x", cost=0.25), UNRESOLVED, reused=True, reason="build-failed"
    ),
    Graded(prediction(2, "c", cost=1.25, duration_s=60), ERROR, "exit status 3: boom"),
    Graded(BadLine(3, 5, "not a JSON object"), ERROR, "not a JSON object"),
    Graded(prediction(4, "b", "", test_patch_calls=[]), UNRESOLVED),  # an empty patch
    Graded(prediction(5, "a", model="org/x"), RESOLVED, flagged=("autoload-file",)),
    Graded(BadLine(6, 8, "the patch must be a string", "c", "org/x"), ERROR, "the patch must..."),
    Graded(prediction(7, "zz", model="n"), ERROR, "unknown task 'zz': no folder tasks/zz"),
    Graded(prediction(8, "d", model="org/x"), ERROR, TIMED_OUT.format(60), reason="timeout"),
]


def nothing() -> dict[str, Any]:
    return {"predictions": 0, "total": None, "mean": None}


def spent(predictions: int, total: float, mean: float) -> dict[str, Any]:
    return {"predictions": predictions, "total": total, "mean": mean}


def reasons(**counted: int) -> dict[str, int]:
    return {reason: counted.get(reason.replace("-", "_"), 0) for reason in REASONS}


def counts(*values: float, **more: Any) -> dict[str, Any]:
    keys = ("total", "resolved", "unresolved", "errors", "empty_patch", "incomplete")
    rate = values[1] / len(TASKS)
    return {
        **dict(zip(keys, values, strict=True)),
        "resolved_rate": rate,
        "trials": 1,
        "pass_at": {"1": rate},
        "pass_at_1_sd": None,
        "test_patch_calls": nothing(),
        "cost": {**nothing(), "per_resolved": None},
        "input_tokens": nothing(),
        "output_tokens": nothing(),
        "duration_s": nothing(),
        **more,
    }


def test_the_whole_runs_summary() -> None:
    assert summarize(GRADED, TASKS, RUN) == {
        "run_id": "r1",
        "started": "2026-01-02T03:04:05+00:00",
        "ended": "2026-01-02T03:14:05+00:00",
        "settings": {
            "ssebench": "0.1.0",
            "backend": "local",
            "isolation": "landlock",
            "timeout": None,
            "jobs": 2,
        },
        "total": 9,
        "resolved": 2,
        "unresolved": 2,
        "errors": 5,
        "resolved_ids": ["m/a", "org/x/a"],
        "unresolved_ids": ["org/x/b", "m/b"],
        "error_list": [
            {"line": 3, "model": "m", "task": "c", "error": "exit status 3: boom"},
            {"line": 5, "model": None, "task": None, "error": "not a JSON object"},
            {"line": 8, "model": "org/x", "task": "c", "error": "the patch must..."},
            {
                "line": 8,
                "model": "n",
                "task": "zz",
                "error": "unknown task 'zz': no folder tasks/zz",
            },
            {"line": 9, "model": "org/x", "task": "d", "error": TIMED_OUT.format(60)},
        ],
        "empty_patch_ids": ["m/b"],
        # a bad line still predicts its task; a prediction of an unknown task predicts none
        "incomplete_ids": ["m/d", "n/a", "n/b", "n/c", "n/d"],
        "flagged_ids": ["org/x/a"],
        "reason_ids": {
            "resolved": ["m/a", "org/x/a"],
            "empty-patch": ["m/b"],
            "patch-does-not-apply": [],
            "build-failed": ["org/x/b"],
            "poc-still-triggers": [],
            "intent-failed": [],
            "functional-failed": [],
            "timeout": ["org/x/d"],
            "error": ["m/c", "n/zz"],  # and the bad line, which names no prediction
        },
        "models": {
            "m": counts(
                3,
                1,
                1,
                1,
                1,
                1,
                reasons=reasons(resolved=1, empty_patch=1, error=1),
                test_patch_calls=spent(2, 2, 1),
                cost={**spent(2, 1.75, 0.875), "per_resolved": 1.75},
                input_tokens=spent(1, 100, 100),
                output_tokens=spent(1, 10, 10),
                duration_s=spent(1, 60, 60),
            ),
            "org/x": counts(
                4,
                1,
                1,
                2,
                0,
                0,
                reasons=reasons(resolved=1, build_failed=1, timeout=1, error=1),
                cost={**spent(1, 0.25, 0.25), "per_resolved": 0.25},
            ),
            "n": counts(1, 0, 0, 1, 0, 4, reasons=reasons(error=1), pass_at={}, trials=1),
        },
    }


def test_pass_at_k_over_trials_against_a_hand_count() -> None:
    """Three trials on each of two tasks of four: a resolves in trials 1 and 3, b in trial 3
    only. Per task pass@k = 1 - C(n-c, k) / C(n, k): a (n 3, c 2) gives 2/3, 1, 1; b (c 1) gives
    1/3, 2/3, 1; over the four tasks (c and d count 0): 1/4, 5/12, 1/2. Trial rates: trial 1
    resolves a, trial 2 none, trial 3 both: 1/4, 0, 2/4, whose sample deviation is 1/4."""
    verdicts = {"a": [True, False, True], "b": [False, False, True]}
    graded = [
        Graded(
            prediction(n, task, model="t", trial=trial + 1),
            RESOLVED if ok else UNRESOLVED,
            reason="resolved" if ok else "poc-still-triggers",
        )
        for n, (task, trial, ok) in enumerate(
            (task, trial, ok) for task, oks in verdicts.items() for trial, ok in enumerate(oks)
        )
    ]
    model = summarize(graded, TASKS, RUN)["models"]["t"]
    assert (model["trials"], model["total"], model["resolved"]) == (3, 6, 3)
    assert model["pass_at"] == pytest.approx({"1": 1 / 4, "2": 5 / 12, "3": 1 / 2})
    assert model["resolved_rate"] == pytest.approx(1 / 4)  # with trials, pass@1
    assert model["pass_at_1_sd"] == pytest.approx(1 / 4)
    # A third task with one trial only: k goes no higher than its one.
    more = [*graded, Graded(prediction(6, "c", model="t"), RESOLVED, reason="resolved")]
    assert summarize(more, TASKS, RUN)["models"]["t"]["pass_at"] == pytest.approx(
        {"1": (2 / 3 + 1 / 3 + 1) / 4}
    )


def test_each_models_swebench_report_and_each_trials() -> None:
    reports = swebench_reports(GRADED, TASKS, "r1")
    assert list(reports) == ["m.r1.json", "org__x.r1.json", "n.r1.json"]
    assert dump(reports["org__x.r1.json"]) == {
        "total_instances": 4,
        "submitted_instances": 4,
        "completed_instances": 2,
        "resolved_instances": 1,
        "unresolved_instances": 1,
        "empty_patch_instances": 0,
        "error_instances": 2,
        "completed_ids": ["a", "b"],
        "incomplete_ids": [],
        "empty_patch_ids": [],
        "submitted_ids": ["a", "b", "c", "d"],
        "resolved_ids": ["a"],
        "unresolved_ids": ["b"],
        "error_ids": ["c", "d"],
        "schema_version": 2,
    }
    # SWE-bench's sets: an empty patch is neither completed nor unresolved; an unknown task is
    # only submitted.
    m, n = dump(reports["m.r1.json"]), dump(reports["n.r1.json"])
    assert (m["empty_patch_ids"], m["unresolved_ids"], m["incomplete_ids"]) == (["b"], [], ["d"])
    assert (n["submitted_ids"], n["error_ids"], n["incomplete_ids"]) == (["zz"], [], TASKS)
    trials = [Graded(prediction(n, "a", model="t", trial=n + 1), RESOLVED if n else UNRESOLVED,
                     reason="x") for n in range(2)]  # fmt: skip
    both = swebench_reports(trials, TASKS, "r1")
    assert list(both) == ["t.r1-trial-1.json", "t.r1-trial-2.json"]
    assert [dump(r)["resolved_ids"] for r in both.values()] == [[], ["a"]]


def test_shards_add_up_to_the_merge() -> None:
    whole = summarize(GRADED, TASKS, RUN)
    shards = [
        summarize([g for g in GRADED if in_shard(g.item, (i, 3))], TASKS, RUN, whole=False)
        for i in range(3)
    ]
    for key in ("total", "resolved", "unresolved", "errors"):
        assert sum(shard[key] for shard in shards) == whole[key]
    for key in ("resolved_ids", "unresolved_ids", "empty_patch_ids", "flagged_ids"):
        assert sorted(x for shard in shards for x in shard[key]) == sorted(whole[key])
    assert [shard["incomplete_ids"] for shard in shards] == [[], [], []]  # the merge lists them
    for model, counted in whole["models"].items():
        for key in ("total", "resolved", "unresolved", "errors", "empty_patch", "resolved_rate"):
            assert sum(s["models"].get(model, {}).get(key, 0) for s in shards) == counted[key]


def test_a_run_with_no_tasks_has_no_rate_to_divide() -> None:
    summary = summarize([Graded(prediction(0, "zz"), ERROR, "unknown task")], [], RUN)
    assert summary["models"]["m"]["resolved_rate"] == 0.0
    assert summary["models"]["m"]["pass_at"] == {}
    assert summary["incomplete_ids"] == []


def test_the_tasks_are_the_folders_with_a_task_toml(tmp_path: Path) -> None:
    for name in ("b", "a", ".git", "notes"):
        (tmp_path / name).mkdir()
    for name in ("b", "a"):
        (tmp_path / name / "task.toml").write_text("")
    (tmp_path / "README.md").write_text("")
    assert task_ids(tmp_path) == ["a", "b"]
    assert task_ids(tmp_path / "missing") == []
