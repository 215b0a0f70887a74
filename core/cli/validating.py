"""`validate`: is a task sound before anyone runs an agent on it; here, or in the task's image
(`--backend docker`: each run on each tree a fresh container, as `grade --backend docker`
grades), and for a whole dataset (`--tasks`, core/cli/dataset.py)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ssebench.core.case import CaseRun
from ssebench.core.check import CheckOutcome, Outcome, Status
from ssebench.core.cli import evaluate, root
from ssebench.core.cli.grading import logs_folder, run_on_copy
from ssebench.core.cli.parser import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK
from ssebench.core.cli.root import Setup
from ssebench.core.daemons.local import Task
from ssebench.core.errors import ConfigError, PatchError
from ssebench.core.orchestrator import Progress
from ssebench.core.registry import Registry
from ssebench.core.verdicts import PatchGrade

# One tree graded: the patch (None: as shipped), progress, where its logs go; its outcome, or
# the exit status of a grade that gave none.
Side = Callable[[bytes | None, Progress, Path | None], Outcome | int]
_STATUS = {status.value.lower(): status for status in Status}


def cmd_validate(args: argparse.Namespace) -> int:
    if args.tasks is not None:
        from ssebench.core.cli.dataset import validate_dataset

        return validate_dataset(args)
    dataset = {"-j": args.jobs, "--out": args.out, "--fix-name": args.fix_name}
    given = [flag for flag, value in dataset.items() if value is not None]
    if given:
        raise ConfigError(f"{given[0]} validates a dataset: use it with --tasks DIR")
    if args.task is None or args.fix is None:
        raise ConfigError("validate needs --task DIR and --fix FILE (or --tasks DIR)")
    return validate_task(args)


def validate_task(args: argparse.Namespace) -> int:
    from ssebench.core.daemons.local import read_patch
    from ssebench.core.skeleton import unfinished
    from ssebench.core.taskwarnings import task_warnings
    from ssebench.core.validation import (
        FIXED,
        SHIPPED,
        judge_task,
        validation_json,
        validation_table,
    )

    setup = root.setup(args, confine=False)
    fix = read_patch(args.fix)
    logs = logs_folder(args.logs)
    assert setup.task is not None  # --task is required
    reverted: list[str] = []  # what the fix changed of the protected paths, in every run
    if args.backend == "docker":
        grade, here = _in_image(setup, args, reverted)
    else:
        grade, here = _here(setup, args, reverted), setup.task
    runs: dict[str, list[Outcome]] = {SHIPPED: [], FIXED: []}
    fix_error = None
    for run in range(1, args.runs + 1):
        for side, patch in ((SHIPPED, None), (FIXED, fix)):
            if patch is not None and fix_error is not None:
                continue  # it did not apply in the first run; it will not in this one
            progress = evaluate.stderr_progress(args.quiet, f"run {run} of {args.runs}, {side}: ")
            kept = logs / f"run-{run}" / side.replace(" ", "-") if logs is not None else None
            try:
                outcome = grade(patch, progress, kept)
            except PatchError as exc:
                fix_error = str(exc)
                continue
            if isinstance(outcome, int):
                return outcome
            runs[side].append(outcome)
    commands = {key: table.cases for key, table in here.checks.items()}
    problems, warnings = unfinished(commands, here.source, fix)
    found = (problems, [*warnings, *task_warnings(here, reverted)])
    validation = judge_task(runs[SHIPPED], runs[FIXED], fix_error, found=found)
    if args.json:
        print(json.dumps(validation_json(validation), indent=2))
    else:
        print(validation_table(validation))
    return EXIT_OK if validation.sound else EXIT_FAILED


def _here(setup: Setup, args: argparse.Namespace, reverted: list[str]) -> Side:
    setup = root.confined(setup, args.isolation)

    def grade(patch: bytes | None, progress: Progress, logs: Path | None) -> Outcome | int:
        outcome = run_on_copy(
            setup, patch, progress, quiet=args.quiet, every_case=True, logs=logs, reverted=reverted
        )
        return EXIT_INTERNAL if outcome is None else outcome

    return grade


def _in_image(setup: Setup, args: argparse.Namespace, reverted: list[str]) -> tuple[Side, Task]:
    """Each tree graded in a fresh container of the task's image; its verdicts read back."""
    from ssebench.core.backends import docker

    assert setup.task is not None
    graded = docker.in_image(setup.task)

    def grade(patch: bytes | None, progress: Progress, logs: Path | None) -> Outcome | int:
        answer = docker.grade_patch(
            graded,
            patch,
            logs=logs,
            isolation=args.isolation,
            quiet=args.quiet,
            reverted=reverted,
            every_case=True,
        )
        if isinstance(answer, int):
            return answer
        return outcome_of(answer, setup.registry, graded.task)

    return grade, graded.here


def outcome_of(answer: dict[str, Any], registry: Registry, task: Task) -> Outcome:
    """A grade's JSON (made in a container) as the outcome it was printed from: each check's
    status and cases; how many cases it has, from task.toml."""
    grade = PatchGrade.model_validate(answer)
    outcomes = []
    for verdict in grade.checks:
        check = registry.by_key(verdict.key)
        if check is None:
            raise ConfigError(f"the grade in the image names a check not here: {verdict.key}")
        table = task.checks.get(verdict.key)
        cases = tuple(
            CaseRun(
                case.exit_code,
                case.signal,
                case.timed_out,
                case.seconds,
                key=verdict.key,
                index=case.index,
                passed=case.passed,
            )
            for case in verdict.cases
        )
        total = len(table.cases) if table is not None else 0
        outcomes.append(CheckOutcome(check, _STATUS[verdict.status], total, cases))
    return Outcome(None, tuple(outcomes), ())
