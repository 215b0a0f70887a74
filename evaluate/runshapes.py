"""The JSON a benchmark run writes beside its verdicts, each shape declared once: summary.json
(its counts, why each prediction ended, each model's counts, rates, pass@k and spend, the run's
id, times and settings) and SWE-bench's run report per model. docs/evaluating.md's tables of
fields are `field_table`'s (a test compares them)."""

from __future__ import annotations

from pydantic import Field

from ssebench.evaluate.verdicts import Shape


class RunError(Shape):
    line: int = Field(description="its line in the predictions file")
    model: str | None = Field(description="the prediction's model")
    task: str | None = Field(description="its task; `null` when the line did not say")
    error: str | None = Field(description="why it has no verdict, one line")


class Spent(Shape):
    predictions: int = Field(description="its predictions whose line gives it")
    total: int | float | None = Field(description="their sum; `null` when none gives it")
    mean: float | None = Field(description="their mean; `null` when none gives it")


class Cost(Spent):
    per_resolved: float | None = Field(
        description="`total` / its resolved predictions: what a resolved task cost; `null` "
        "when none is resolved or no line gives a cost"
    )


class ModelCounts(Shape):
    total: int = Field(description="its predictions, bad lines that name it included")
    resolved: int = Field(description="its resolved predictions")
    unresolved: int = Field(description="its unresolved ones, empty patches included")
    errors: int = Field(description="its predictions with no verdict")
    empty_patch: int = Field(description="its predictions with a `null` or empty patch")
    incomplete: int = Field(description="tasks of `--tasks` it has no prediction for")
    resolved_rate: float = Field(
        description="`resolved` / the tasks in `--tasks`: a task it did not predict counts as "
        "not resolved (0 when `--tasks` has none); with trials, the mean over each task's "
        "trials (`pass_at.1`)"
    )
    reasons: dict[str, int] = Field(
        description="its predictions by `reason` (below): every reason, zeros too, then any "
        "other check's"
    )
    trials: int = Field(description="the most predictions it gave one task (1: no trials)")
    pass_at: dict[str, float] = Field(
        description="pass@k by k, from 1 to the fewest predictions it gave a task it predicted: "
        "per task 1 - C(n-c, k) / C(n, k) (n its predictions of the task, c of them resolved; "
        "the unbiased estimator), averaged over the tasks of `--tasks` (a task it did not "
        "predict counts 0)"
    )
    pass_at_1_sd: float | None = Field(
        description="the sample standard deviation, across trials, of each trial's resolved "
        "rate (trial j: each task's j-th prediction in trial order); `null` with fewer than 2"
    )
    test_patch_calls: Spent = Field(description="its agent's test_patch calls per prediction")
    cost: Cost = Field(description="what its predictions cost, US dollars")
    input_tokens: Spent = Field(description="the tokens its model read")
    output_tokens: Spent = Field(description="the tokens its model wrote")
    duration_s: Spent = Field(description="how long its agent ran, seconds")


class RunSettings(Shape):
    ssebench: str = Field(description="the ssebench version")
    backend: str = Field(description="`--backend`: `local` or `docker`")
    isolation: str = Field(
        description="how cases were confined: the mechanism (`bubblewrap`, `landlock`, `none`),"
        " or `--isolation` as asked of each task's image"
    )
    timeout: float | None = Field(description="`--timeout` in seconds; `null`: no limit")
    jobs: int = Field(description="`-j`: grades at once")


class Summary(Shape):
    """summary.json of a benchmark run."""

    run_id: str = Field(description="`--run-id` (default: the predictions file's stem)")
    started: str = Field(
        description="when the run first started grading into `--out`, ISO 8601 in UTC"
    )
    ended: str = Field(description="when this summary was written, ISO 8601 in UTC")
    settings: RunSettings = Field(description="what decides a verdict besides the patch")
    total: int = Field(description="predictions in the file (or the shard), bad lines included")
    resolved: int = Field(description="resolved predictions")
    unresolved: int = Field(description="unresolved ones; a patch that does not apply is one")
    errors: int = Field(
        description="predictions with no verdict: a bad line, a missing patch, an unknown "
        "task, a grade that failed (an internal failure, a crash)"
    )
    resolved_ids: list[str] = Field(
        description="`model/task` of each resolved one, in the model's own name "
        "(`acme/agent-1/c-rle`), in file order"
    )
    unresolved_ids: list[str] = Field(description="the same, of each unresolved one")
    error_list: list[RunError] = Field(description="each error")
    empty_patch_ids: list[str] = Field(
        description="each prediction whose patch is `null` or empty: unresolved (among "
        "`unresolved_ids` too), not graded, no file written"
    )
    incomplete_ids: list[str] = Field(
        description="for each model of the file, `model/task` of each task of `--tasks` it has "
        "no prediction for; `[]` in a shard's summary (the merge lists them)"
    )
    flagged_ids: list[str] = Field(
        description="each prediction whose result.json lists `signals`: what a reviewer should "
        "look at (a flag never changes `resolved`)"
    )
    reason_ids: dict[str, list[str]] = Field(
        description="the predictions behind each `reason`, every reason (below) listed"
    )
    models: dict[str, ModelCounts] = Field(
        description="each model's counts, by its own name, in file order"
    )


class SwebenchReport(Shape):
    """`OUT/<model>.<run_id>.json`: SWE-bench's run report (`make_run_report`), for one model,
    by task id."""

    total_instances: int = Field(description="tasks in `--tasks`")
    submitted_instances: int = Field(description="tasks the model has a line for")
    completed_instances: int = Field(description="tasks graded to a verdict")
    resolved_instances: int = Field(description="tasks resolved")
    unresolved_instances: int = Field(description="tasks graded unresolved")
    empty_patch_instances: int = Field(description="tasks given a `null` or empty patch")
    error_instances: int = Field(description="tasks with no verdict")
    completed_ids: list[str] = Field(description="each completed task, sorted")
    incomplete_ids: list[str] = Field(description="each task of `--tasks` with no line")
    empty_patch_ids: list[str] = Field(description="each empty patch's task")
    submitted_ids: list[str] = Field(description="each task it has a line for")
    resolved_ids: list[str] = Field(description="each resolved task")
    unresolved_ids: list[str] = Field(description="each unresolved task")
    error_ids: list[str] = Field(description="each task with no verdict")
    schema_version: int = Field(2, description="2, SWE-bench's")
