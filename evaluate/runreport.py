"""A benchmark run's report, as evaluators compare runs (SWE-bench's run report is the convention
they know): summary.json's counts and the predictions behind them, overall and per model, why
each ended, each model's pass@k and spend (evaluate/modelstats.py), and the run's id, times and
settings.

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
from ssebench.evaluate.modelstats import pass_at_k, spent, trials_by_task
from ssebench.evaluate.predictions import Prediction
from ssebench.evaluate.reasons import in_order
from ssebench.evaluate.runrecord import RunFields
from ssebench.evaluate.runshapes import ModelCounts, RunError, Summary
from ssebench.evaluate.verdicts import dump

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


def _counts(graded: Sequence[Graded], missing: int, tasks: Sequence[str]) -> ModelCounts:
    resolved = sum(g.verdict == RESOLVED for g in graded)
    trials = max(map(len, trials_by_task(graded).values()), default=0)
    pass_at, spread = pass_at_k(graded, tasks)
    spend = spent(graded, resolved)
    rate = resolved / len(tasks) if tasks else 0.0
    reasons = [g.why for g in graded]
    return ModelCounts(
        total=len(graded),
        resolved=resolved,
        unresolved=sum(g.verdict == UNRESOLVED for g in graded),
        errors=sum(g.verdict == ERROR for g in graded),
        empty_patch=sum(g.empty for g in graded),
        incomplete=missing,
        resolved_rate=pass_at.get("1", rate) if trials > 1 else rate,
        reasons={reason: reasons.count(reason) for reason in in_order(reasons)},
        trials=trials,
        pass_at=pass_at,
        pass_at_1_sd=spread,
        test_patch_calls=spend.test_patch_calls,
        cost=spend.cost,
        input_tokens=spend.input_tokens,
        output_tokens=spend.output_tokens,
        duration_s=spend.duration_s,
    )


def summarize(
    graded: Sequence[Graded], tasks: Sequence[str], run: RunFields, *, whole: bool = True
) -> dict[str, Any]:
    """summary.json: the run, the counts DESIGN names, which predictions they are, every error,
    why each ended, and each model's counts; `whole` is False for a shard's (which lists no
    incomplete ones)."""
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
            tasks,
        )
        for model in models_of(graded)
    }
    reasons = in_order([g.why for g in graded])
    return dump(
        Summary(
            run_id=run.run_id,
            started=run.started,
            ended=run.ended,
            settings=run.settings,
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
            reason_ids={reason: _ids([g for g in graded if g.why == reason]) for reason in reasons},
            models=models,
        )
    )
