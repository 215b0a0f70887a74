"""summary.json as evaluators compare runs (evaluate/runreport.py): the counts, which predictions
they are, empty patches, tasks a model has no prediction for, flagged verdicts, and each model's
counts with its rate over every task of `--tasks`; a shard's and the merge's."""

from __future__ import annotations

from pathlib import Path

from ssebench.evaluate.batch import ERROR, RESOLVED, UNRESOLVED, Graded
from ssebench.evaluate.predictions import BadLine, Prediction, in_shard
from ssebench.evaluate.runreport import summarize, task_ids

TASKS = ["a", "b", "c", "d"]


def prediction(number: int, task: str, patch: str = "diff", model: str = "m") -> Prediction:
    return Prediction(number, number + 1, task, model, patch)


GRADED = [
    Graded(prediction(0, "a"), RESOLVED),
    Graded(prediction(1, "b", model="org/x"), UNRESOLVED, reused=True),
    Graded(prediction(2, "c"), ERROR, "exit status 3: boom"),
    Graded(BadLine(3, 5, "not a JSON object"), ERROR, "not a JSON object"),
    Graded(prediction(4, "b", ""), UNRESOLVED),  # an empty patch
    Graded(prediction(5, "a", model="org/x"), RESOLVED, flagged=True),
    Graded(BadLine(6, 8, "the patch must be a string", "c", "org/x"), ERROR, "the patch must..."),
    Graded(prediction(7, "zz", model="n"), ERROR, "unknown task 'zz': no folder tasks/zz"),
]


def counts(*values: float) -> dict[str, float]:
    keys = ("total", "resolved", "unresolved", "errors", "empty_patch", "incomplete")
    return {**dict(zip(keys, values, strict=True)), "resolved_rate": values[1] / len(TASKS)}


def test_the_whole_runs_summary() -> None:
    assert summarize(GRADED, TASKS) == {
        "total": 8,
        "resolved": 2,
        "unresolved": 2,
        "errors": 4,
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
        ],
        "empty_patch_ids": ["m/b"],
        # a bad line still predicts its task; a prediction of an unknown task predicts none
        "incomplete_ids": ["m/d", "org/x/d", "n/a", "n/b", "n/c", "n/d"],
        "flagged_ids": ["org/x/a"],
        "models": {
            "m": counts(3, 1, 1, 1, 1, 1),
            "org/x": counts(3, 1, 1, 1, 0, 1),
            "n": counts(1, 0, 0, 1, 0, 4),
        },
    }


def test_shards_add_up_to_the_merge() -> None:
    whole = summarize(GRADED, TASKS)
    shards = [
        summarize([g for g in GRADED if in_shard(g.item, (i, 3))], TASKS, whole=False)
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
    summary = summarize([Graded(prediction(0, "zz"), ERROR, "unknown task")], [])
    assert summary["models"] == {"m": counts(1, 0, 0, 1, 0, 0) | {"resolved_rate": 0.0}}
    assert summary["incomplete_ids"] == []


def test_the_tasks_are_the_folders_with_a_task_toml(tmp_path: Path) -> None:
    for name in ("b", "a", ".git", "notes"):
        (tmp_path / name).mkdir()
    for name in ("b", "a"):
        (tmp_path / name / "task.toml").write_text("")
    (tmp_path / "README.md").write_text("")
    assert task_ids(tmp_path) == ["a", "b"]
    assert task_ids(tmp_path / "missing") == []
