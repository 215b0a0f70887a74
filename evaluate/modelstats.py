"""What a model's predictions come to beyond the counts: pass@k over its trials, and what its
runs spent (test_patch calls, cost, tokens, time) as their lines say.

pass@k is the unbiased estimator of Chen et al. (2021), per task 1 - C(n-c, k) / C(n, k) with n
the model's predictions of the task and c those resolved, averaged over every task of
`--tasks`: a task it did not predict counts 0, as in `resolved_rate`, and a prediction with no
verdict (an error) or an empty patch is a trial that did not resolve. k goes up to the fewest
predictions it gave a task it predicted, where the estimator is defined for every such task.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ssebench.evaluate.batch import RESOLVED, Graded
from ssebench.evaluate.predictions import Prediction
from ssebench.evaluate.runshapes import Cost, Spent

DIGITS = 6  # sums of dollars and seconds, rounded past float noise (0.1 + 0.2)


def pass_at(n: int, c: int, k: int) -> float:
    """The chance that k of n predictions, c of them resolved, drawn without replacement, hold
    a resolved one."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def trials_by_task(graded: Sequence[Graded]) -> dict[str, list[bool]]:
    """Whether each prediction of one model resolved, by task, in trial order (a bad line that
    names the task after its numbered ones)."""
    by_task: dict[str, list[tuple[tuple[int, int, int], bool]]] = {}
    for one in graded:
        item = one.item
        if item.task is None:
            continue
        order = (0, item.trial or 1, item.number) if isinstance(item, Prediction) else (1, 0, 0)
        by_task.setdefault(item.task, []).append((order, one.verdict == RESOLVED))
    return {task: [resolved for _, resolved in sorted(runs)] for task, runs in by_task.items()}


def pass_at_k(
    graded: Sequence[Graded], tasks: Sequence[str]
) -> tuple[dict[str, float], float | None]:
    """pass@k by k (as text: JSON's keys), and the sample standard deviation across trials of
    each trial's resolved rate (None with fewer than two)."""
    runs = {task: found for task, found in trials_by_task(graded).items() if task in tasks}
    fewest = min((len(found) for found in runs.values()), default=0)
    if not tasks:
        return {str(k): 0.0 for k in range(1, fewest + 1)}, None
    rates = {
        str(k): sum(pass_at(len(found), sum(found), k) for found in runs.values()) / len(tasks)
        for k in range(1, fewest + 1)
    }
    per_trial = [sum(found[j] for found in runs.values()) / len(tasks) for j in range(fewest)]
    return rates, statistics.stdev(per_trial) if fewest >= 2 else None


def _spent(values: list[float]) -> Spent:
    if not values:
        return Spent(predictions=0, total=None, mean=None)
    total = sum(values)
    return Spent(predictions=len(values), total=round(total, DIGITS),
                 mean=round(total / len(values), DIGITS))  # fmt: skip


def _given(graded: Sequence[Graded], read: Callable[[Prediction], float | None]) -> list[float]:
    return [
        value
        for one in graded
        if isinstance(one.item, Prediction) and (value := read(one.item)) is not None
    ]


@dataclass(frozen=True)
class Spend:
    """What one model's predictions recorded of their runs, as ModelCounts' fields."""

    test_patch_calls: Spent
    cost: Cost
    input_tokens: Spent
    output_tokens: Spent
    duration_s: Spent


def spent(graded: Sequence[Graded], resolved: int) -> Spend:
    def calls(item: Prediction) -> float | None:
        made = item.agent.test_patch_calls
        return None if made is None else len(made)

    def tokens(side: str) -> Callable[[Prediction], float | None]:
        return lambda item: None if item.agent.tokens is None else getattr(item.agent.tokens, side)

    cost = _spent(_given(graded, lambda item: item.agent.cost))
    each = None if cost.total is None or not resolved else round(cost.total / resolved, DIGITS)
    return Spend(
        test_patch_calls=_spent(_given(graded, calls)),
        cost=Cost(**cost.model_dump(), per_resolved=each),
        input_tokens=_spent(_given(graded, tokens("input"))),
        output_tokens=_spent(_given(graded, tokens("output"))),
        duration_s=_spent(_given(graded, lambda item: item.agent.duration_s)),
    )
