"""A benchmark run's report, as evaluators compare runs (SWE-bench's run report is the convention
they know): summary.json's counts and the predictions behind them, overall and per model.

Rates are over the tasks of `--tasks`, never over what a model chose to submit: a task a model
has no prediction for is incomplete, and counts as not resolved. A shard counts the predictions
of its shard; tasks with no prediction belong to no shard, so only the whole run's summary (the
merge) lists them, and the shards' counts add up to the merge's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ssebench.evaluate.batch import ERROR, RESOLVED, UNRESOLVED, Graded
from ssebench.evaluate.predictions import Prediction
from ssebench.evaluate.verdicts import ModelCounts, RunError, Summary, dump

TASK_FILE = "task.toml"


def task_ids(tasks: Path) -> list[str]:
    """The tasks of `--tasks`: its folders that hold a task.toml, by name."""
    try:
        folders = list(tasks.iterdir())
    except OSError:
        return []
    return sorted(f.name for f in folders if (f / TASK_FILE).is_file())


def models_of(graded: Sequence[Graded]) -> list[str]:
    """Every model the predictions name, bad lines that name one included, in file order."""
    return list(dict.fromkeys(g.item.model for g in graded if g.item.model is not None))


def incomplete(graded: Sequence[Graded], tasks: Sequence[str]) -> list[tuple[str, str]]:
    """(model, task) for each model and each task it has no prediction for, right or wrong."""
    named = {(g.item.model, g.item.task) for g in graded}
    return [(m, t) for m in models_of(graded) for t in tasks if (m, t) not in named]


def _ids(graded: Sequence[Graded]) -> list[str]:
    return [g.item.id for g in graded if isinstance(g.item, Prediction)]


def _counts(graded: Sequence[Graded], missing: int, tasks: int) -> ModelCounts:
    resolved = sum(g.verdict == RESOLVED for g in graded)
    return ModelCounts(
        total=len(graded),
        resolved=resolved,
        unresolved=sum(g.verdict == UNRESOLVED for g in graded),
        errors=sum(g.verdict == ERROR for g in graded),
        empty_patch=sum(g.empty for g in graded),
        incomplete=missing,
        resolved_rate=resolved / tasks if tasks else 0.0,
    )


def summarize(
    graded: Sequence[Graded], tasks: Sequence[str], *, whole: bool = True
) -> dict[str, Any]:
    """summary.json: the counts DESIGN names, which predictions they are, every error, and each
    model's counts; `whole` is False for a shard's (which lists no incomplete ones)."""
    missing = incomplete(graded, tasks) if whole else []
    by_verdict = {v: [g for g in graded if g.verdict == v] for v in (RESOLVED, UNRESOLVED, ERROR)}
    errors = [
        RunError(line=g.item.line, model=g.item.model, task=g.item.task, error=g.error)
        for g in by_verdict[ERROR]
    ]
    models = {
        model: _counts(
            [g for g in graded if g.item.model == model],
            sum(m == model for m, _ in missing),
            len(tasks),
        )
        for model in models_of(graded)
    }
    return dump(
        Summary(
            total=len(graded),
            resolved=len(by_verdict[RESOLVED]),
            unresolved=len(by_verdict[UNRESOLVED]),
            errors=len(errors),
            resolved_ids=_ids(by_verdict[RESOLVED]),
            unresolved_ids=_ids(by_verdict[UNRESOLVED]),
            error_list=errors,
            empty_patch_ids=_ids([g for g in graded if g.empty]),
            incomplete_ids=[f"{model}/{task}" for model, task in missing],
            flagged_ids=_ids([g for g in graded if g.flagged]),
            models=models,
        )
    )
