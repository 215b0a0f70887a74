"""`validate --tasks DIR --out OUT`: every task of a dataset checked as `validate` checks one, as
upstream's `dataset verify` does, resumably, like a benchmark run's grading.

Each task is validated by a process of its own (-j at once), asked by a typed request to validate
as `ssebench validate --task --fix` does (core/cli/child.py), here or in its image (`--backend
docker`); it answers with one `Ended` record (evaluate/ended.py). What each leaves goes to
`OUT/<task>/`: `validation.json` (its verdict and what it was made from, whole or not at all),
`logs/` (every case's output, as `validate --logs`) and `validate.log` (its stderr, for a
reader). A rerun reuses a verdict made from the same task, fix, runs, ssebench and way of
validating, and validates the rest; a task with no verdict (no fix, a validate that failed) is
tried again. `OUT/summary.json` tallies them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ssebench.core.cli.batchrun import EXIT_INTERRUPTED, EXIT_TERMINATED, grader_for, run_basis
from ssebench.core.cli.parser import EXIT_FAILED, EXIT_OK
from ssebench.core.cli.requests import ValidateRequest
from ssebench.core.cli.root import Root
from ssebench.core.errors import ConfigError
from ssebench.evaluate.batch import run_child
from ssebench.evaluate.datasetverdicts import (
    ERROR,
    NOT_SOUND,
    SOUND,
    DatasetSummary,
    TaskVerdict,
    ValidatedWith,
    dataset_table,
    read_validation,
)
from ssebench.evaluate.digests import sha256, ssebench_version, task_sha256
from ssebench.evaluate.ended import read_ended, why_no_verdict
from ssebench.evaluate.runreport import task_ids
from ssebench.evaluate.verdicts import Validation, dump, write_json

VALIDATION, LOGS, VALIDATE_LOG, SUMMARY = "validation.json", "logs", "validate.log", "summary.json"


def _checked_flags(args: argparse.Namespace) -> str:
    """The flags' mistakes, one line each before anything runs; the fix's file name."""
    for flag, value in (("--fix", args.fix), ("--logs", args.logs)):
        if value is not None:
            raise ConfigError(f"{flag} validates one task: use it with --task DIR")
    if args.out is None:
        raise ConfigError("--tasks needs --out DIR, where each task's verdict is kept")
    if not args.tasks.is_dir():
        raise ConfigError(f"{args.tasks}: no such folder of tasks")
    fix_name: str = args.fix_name or "fix.patch"
    if "/" in fix_name or fix_name in ("", ".", ".."):
        raise ConfigError(f"--fix-name {fix_name!r}: must be a file's name in each task folder")
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{args.out}: cannot make the output folder: {exc.strerror}") from None
    return fix_name


def validate_dataset(args: argparse.Namespace, root: Root) -> int:
    from ssebench.core.stopping import CHILD

    fix_name = _checked_flags(args)
    basis = run_basis(args, root)
    how = grader_for(args.backend, basis, root)
    ids = task_ids(args.tasks)

    def child_argv(folder: Path, fix: Path, logs: Path) -> list[str]:
        one = ValidateRequest(basis=basis.model_copy(update={"task": folder}), fix=fix,
                              logs=logs, backend=args.backend, runs=args.runs)  # fmt: skip
        return [*CHILD, one.model_dump_json()]

    async def main() -> list[TaskVerdict]:
        current = asyncio.current_task()
        assert current is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, current.cancel)
        found: dict[str, TaskVerdict] = {}
        queue = iter(ids)  # shared: each worker takes the next task

        async def worker() -> None:
            for task in queue:
                started = time.monotonic()
                verdict = await _validate(task, args, fix_name, child_argv, how)
                found[task] = verdict
                _progress(args, len(found), len(ids), verdict, time.monotonic() - started)

        await asyncio.gather(*(worker() for _ in range(max(1, args.jobs or 1))))
        return [found[task] for task in ids]

    try:
        verdicts = asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError) as exc:
        rest = f"run the same command again to validate the rest of {args.tasks}"
        print(f"ssebench: stopped; {rest}", file=sys.stderr)
        return EXIT_INTERRUPTED if isinstance(exc, KeyboardInterrupt) else EXIT_TERMINATED
    summary = _summary(verdicts)
    write_json(args.out / SUMMARY, dump(summary))
    if args.json:
        print(json.dumps(dump(summary), indent=2))
    else:
        runs = "1 run" if args.runs == 1 else f"{args.runs} runs"
        header = f"ssebench validate: {len(ids)} tasks in {args.tasks} ({runs} on each tree)"
        print(dataset_table(summary, header))
    return EXIT_OK if summary.sound == summary.total else EXIT_FAILED


async def _validate(
    task: str,
    args: argparse.Namespace,
    fix_name: str,
    child_argv: Callable[[Path, Path, Path], list[str]],
    how: Callable[[Path], str | None],
) -> TaskVerdict:
    folder, out = args.tasks / task, args.out / task
    fix = folder / fix_name
    try:
        fix_bytes = fix.read_bytes()
    except OSError as exc:
        why = f"no fix: {fix}: {exc.strerror or exc} (--fix-name names another file)"
        return _verdict(task, None, error=why)
    record = ValidatedWith(
        task=task,
        fix_sha256=sha256(fix_bytes),
        task_sha256=await asyncio.to_thread(task_sha256, folder),
        ssebench=ssebench_version(),
        runs=args.runs,
        validator=await asyncio.to_thread(how, folder),
    )
    saved = read_validation(out / VALIDATION)
    usable = None not in (record.task_sha256, record.validator)
    if saved is not None and usable and saved.validated_with == record:
        return _verdict(task, saved, reused=True)
    out.mkdir(parents=True, exist_ok=True)
    code, output = await run_child(child_argv(folder, fix, out / LOGS), out / VALIDATE_LOG, None)
    assert code is not None  # no time limit
    ended = read_ended(Validation, output)
    found = ended.verdict if code in (0, 1) and ended is not None else None
    if found is None:
        return _verdict(task, None, error=why_no_verdict(code, ended))
    write_json(out / VALIDATION, {**dump(found), "validated_with": dump(record)})
    return _verdict(task, found)


def _verdict(
    task: str, found: Validation | None, *, reused: bool = False, error: str | None = None
) -> TaskVerdict:
    if found is None:
        empty: list[str] = []
        return TaskVerdict(
            task=task, verdict=ERROR, reused=False, problems=empty, flaky=empty,
            warnings=empty, error=error,
        )  # fmt: skip
    return TaskVerdict(
        task=task,
        verdict=SOUND if found.sound else NOT_SOUND,
        reused=reused,
        problems=found.problems,
        flaky=found.flaky,
        warnings=found.warnings,
        error=None,
    )


def _summary(verdicts: list[TaskVerdict]) -> DatasetSummary:
    def ids(kind: str) -> list[str]:
        return [v.task for v in verdicts if v.verdict == kind]

    return DatasetSummary(
        total=len(verdicts),
        sound=len(ids(SOUND)),
        not_sound=len(ids(NOT_SOUND)),
        errors=len(ids(ERROR)),
        sound_ids=ids(SOUND),
        not_sound_ids=ids(NOT_SOUND),
        error_ids=ids(ERROR),
        tasks=verdicts,
    )


def _progress(
    args: argparse.Namespace, done: int, total: int, verdict: TaskVerdict, seconds: float
) -> None:
    if args.quiet:
        return
    if verdict.error is not None:
        how = f"error: {verdict.error}"
    else:
        how = verdict.verdict + (" (reused)" if verdict.reused else f" in {seconds:.1f} s")
    print(f"ssebench: [{done}/{total}] {verdict.task}: {how}", file=sys.stderr, flush=True)
