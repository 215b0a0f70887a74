"""`validate`: is a task sound before anyone runs an agent on it; here, or in the task's image
(`--backend docker`: each run on each tree a fresh container, as `grade --backend docker`
grades), and for a whole dataset (`--tasks`, core/cli/dataset.py)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ssebench.core.case import CaseRun
from ssebench.core.check import CheckOutcome, Outcome, Status
from ssebench.core.cli import evaluate
from ssebench.core.cli.grading import in_container, logs_folder, run_on_copy
from ssebench.core.cli.parser import EXIT_FAILED, EXIT_OK
from ssebench.core.cli.requests import ValidateRequest
from ssebench.core.cli.root import Root
from ssebench.core.daemons.door import Task
from ssebench.core.errors import ConfigError, PatchError
from ssebench.core.orchestrator import Progress
from ssebench.core.registry import Registry
from ssebench.core.toolfiles import Graft
from ssebench.evaluate.verdicts import PatchGrade

if TYPE_CHECKING:
    from ssebench.evaluate.validation import Validation

# One tree graded: the patch (None: as shipped), progress, where its logs go; its outcome
# (NoVerdict when it gave none).
Side = Callable[[bytes | None, Progress, Path | None], Outcome]
_STATUS = {status.value.lower(): status for status in Status}


def cmd_validate(args: argparse.Namespace, root: Root) -> int:
    from ssebench.evaluate.validation import validation_json, validation_table

    if args.tasks is not None:
        from ssebench.core.cli.dataset import validate_dataset

        return validate_dataset(args, root)
    dataset = {"-j": args.jobs, "--out": args.out, "--fix-name": args.fix_name}
    given = [flag for flag, value in dataset.items() if value is not None]
    if given:
        raise ConfigError(f"{given[0]} validates a dataset: use it with --tasks DIR")
    if args.task is None or args.fix is None:
        raise ConfigError("validate needs --task DIR and --fix FILE (or --tasks DIR)")
    request = ValidateRequest(
        basis=root.basis, fix=args.fix, logs=args.logs, backend=args.backend, runs=args.runs,
        quiet=args.quiet,
    )  # fmt: skip
    validation = validate_task(root, request)
    if args.json:
        print(json.dumps(validation_json(validation), indent=2))
    else:
        print(validation_table(validation))
    return EXIT_OK if validation.sound else EXIT_FAILED


def validate_task(root: Root, request: ValidateRequest) -> Validation:
    """The task's validation: each tree graded `runs` times, here or in the task's image."""
    from ssebench.core.daemons.door import read_patch
    from ssebench.evaluate.skeleton import unfinished
    from ssebench.evaluate.taskwarnings import task_warnings
    from ssebench.evaluate.validation import FIXED, SHIPPED, judge_task

    assert root.task is not None  # --task is required
    fix = read_patch(request.fix)
    logs = logs_folder(request.logs)
    graft = Graft()  # what the grades did to the fix, in every run
    if request.backend == "docker":
        grade, here = _in_image(root, request, graft)
    else:
        grade, here = _here(root, request, graft), root.task
    runs: dict[str, list[Outcome]] = {SHIPPED: [], FIXED: []}
    fix_error = None
    for run in range(1, request.runs + 1):
        for side, patch in ((SHIPPED, None), (FIXED, fix)):
            if patch is not None and fix_error is not None:
                continue  # it did not apply in the first run; it will not in this one
            prefix = f"run {run} of {request.runs}, {side}: "
            progress = evaluate.stderr_progress(request.quiet, prefix)
            kept = logs / f"run-{run}" / side.replace(" ", "-") if logs is not None else None
            try:
                runs[side].append(grade(patch, progress, kept))
            except PatchError as exc:
                fix_error = str(exc)
    commands = {key: table.cases for key, table in here.checks.items()}
    problems, warnings = unfinished(commands, here.source, fix)
    found = (problems, [*warnings, *task_warnings(here, graft)])
    return judge_task(runs[SHIPPED], runs[FIXED], fix_error, found=found)


def _here(root: Root, request: ValidateRequest, graft: Graft) -> Side:
    root.mechanism()  # refused in one line before anything is graded

    def grade(patch: bytes | None, progress: Progress, logs: Path | None) -> Outcome:
        return run_on_copy(
            root, patch, progress, quiet=request.quiet, every_case=True, logs=logs,
            graft=graft,
        )  # fmt: skip

    return grade


def _in_image(root: Root, request: ValidateRequest, graft: Graft) -> tuple[Side, Task]:
    """Each tree graded in a fresh container of the task's image; its verdicts read back."""
    from ssebench.evaluate.backends import docker

    assert root.task is not None
    graded = docker.in_image(root.task)

    def grade(patch: bytes | None, progress: Progress, logs: Path | None) -> Outcome:
        asked = in_container(root, logs, every_case=True, quiet=request.quiet)
        verdict = docker.grade_in_image(graded, patch, asked, graft=graft)
        return outcome_of(verdict, root.registry, graded.task)

    return grade, graded.here


def outcome_of(grade: PatchGrade, registry: Registry, task: Task) -> Outcome:
    """A grade made in a container as the outcome it was made from: each check's status and
    cases; how many cases it has, from task.toml."""
    outcomes = []
    for verdict in grade.checks:
        check = registry.by_key(verdict.key)
        if check is None:
            raise ConfigError(f"the grade in the image names a check not here: {verdict.key}")
        table = task.checks.get(verdict.key)
        # The grade's JSON holds the record's own fields: read back into it, not copied.
        cases = tuple(CaseRun(**case.model_dump(), key=verdict.key) for case in verdict.cases)
        total = len(table.cases) if table is not None else 0
        outcomes.append(CheckOutcome(check, _STATUS[verdict.status], total, cases))
    return Outcome(None, tuple(outcomes), ())
