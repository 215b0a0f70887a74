"""SWE-bench's run report, one per model: `OUT/<model>.<run id>.json`, as SWE-bench's
`make_run_report` writes it (schema_version 2), so a script written for SWE-bench's reports
reads ours unchanged.

Its ids are task ids, its sets SWE-bench's: a model's prediction of each task of `--tasks` is
completed (resolved or unresolved), an empty patch, or an error (no verdict); a task it has no
line for is incomplete; submitted are the tasks it has a line for, unknown ones included. A
patch that does not apply is completed and unresolved here, as ssebench counts it (SWE-bench's
harness makes it an error). A model with trials gets one report per trial, each a run of its
own to SWE-bench's tooling: `<model>.<run id>-trial-<N>.json` (a task's lone line is trial 1).
"""

from __future__ import annotations

from collections.abc import Sequence

from ssebench.evaluate.batch import ERROR, RESOLVED, RUN_FILE, Graded
from ssebench.evaluate.predictions import Prediction, model_folder
from ssebench.evaluate.runreport import models_of
from ssebench.evaluate.runshapes import SwebenchReport


def report_name(model: str, run_id: str, trial: int | None = None) -> str:
    run = run_id if trial is None else f"{run_id}-trial-{trial}"
    return f"{model_folder(model)}.{run}.json"


def _trial(graded: Graded) -> int:
    return (graded.item.trial or 1) if isinstance(graded.item, Prediction) else 1


def _report(chosen: dict[str, Graded], tasks: Sequence[str]) -> SwebenchReport:
    """The report of one model's predictions, one a task at most."""
    known = [task for task in tasks if task in chosen]
    sets: dict[str, list[str]] = {"completed": [], "resolved": [], "unresolved": [],
                                  "empty_patch": [], "error": []}  # fmt: skip
    for task in known:
        graded = chosen[task]
        if graded.empty:
            sets["empty_patch"].append(task)
        elif graded.verdict == ERROR:
            sets["error"].append(task)
        else:
            sets["completed"].append(task)
            sets["resolved" if graded.verdict == RESOLVED else "unresolved"].append(task)
    ids = {name: sorted(found) for name, found in sets.items()}
    return SwebenchReport(
        total_instances=len(tasks),
        submitted_instances=len(chosen),
        completed_instances=len(ids["completed"]),
        resolved_instances=len(ids["resolved"]),
        unresolved_instances=len(ids["unresolved"]),
        empty_patch_instances=len(ids["empty_patch"]),
        error_instances=len(ids["error"]),
        completed_ids=ids["completed"],
        incomplete_ids=sorted(task for task in tasks if task not in chosen),
        empty_patch_ids=ids["empty_patch"],
        submitted_ids=sorted(chosen),
        resolved_ids=ids["resolved"],
        unresolved_ids=ids["unresolved"],
        error_ids=ids["error"],
        schema_version=2,
    )


def swebench_reports(
    graded: Sequence[Graded], tasks: Sequence[str], run_id: str
) -> dict[str, SwebenchReport]:
    """Each model's report (each trial's, with trials) by its file name in OUT."""
    reports = {}
    for model in models_of(graded):
        try:
            if RUN_FILE.fullmatch(model_folder(model)):
                continue  # named like the run's files: its lines are errors, in summary.json
        except ValueError:
            continue  # a bad line's model that cannot name a file: its errors are in summary.json
        own = [g for g in graded if g.item.model == model and g.item.task is not None]
        trials = sorted({_trial(g) for g in own})
        with_trials = any(isinstance(g.item, Prediction) and g.item.trial for g in own)
        for trial in trials:
            chosen: dict[str, Graded] = {}
            for one in own:  # a task's prediction of this trial before a bad line naming it
                task = one.item.task
                if _trial(one) == trial and task is not None:
                    kept = chosen.get(task, one)
                    chosen[task] = one if isinstance(one.item, Prediction) else kept
            name = report_name(model, run_id, trial if with_trials else None)
            reports[name] = _report(chosen, tasks)
    return reports
