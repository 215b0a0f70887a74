"""The evaluator's commands: `grade` (in place, a patch on a pristine copy, or a benchmark
run's predictions) and `validate` (is a task sound before anyone runs an agent on it)."""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ssebench.core.backends import isolation_flags
from ssebench.core.check import Outcome
from ssebench.core.cli import evaluate
from ssebench.core.cli.isolation import announce, choose_isolation
from ssebench.core.cli.parser import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK
from ssebench.core.errors import ConfigError, PatchError
from ssebench.core.orchestrator import Progress
from ssebench.core.registry import Registry, build_registry
from ssebench.core.report import internal_failure
from ssebench.daemon.isolation import Mechanism
from ssebench.daemon.task import Task, load_task

if TYPE_CHECKING:
    from ssebench.core.batch import Graded

EXIT_TERMINATED, EXIT_INTERRUPTED = 128 + signal.SIGTERM, 128 + signal.SIGINT
_RUN_FLAGS = {
    "predictions": "--predictions",
    "out": "--out",
    "jobs": "-j",
    "shard": "--shard",
    "timeout": "--timeout",
}


def cmd_grade(args: argparse.Namespace) -> int:
    if args.tasks is not None:
        return _grade_run(args)
    given = [flag for name, flag in _RUN_FLAGS.items() if getattr(args, name) is not None]
    if given:
        raise ConfigError(f"{given[0]} grades a benchmark run: use it with --tasks DIR")
    if args.patch is not None:
        return _grade_patch(args)
    if args.logs is not None:
        raise ConfigError("--logs saves the logs of a patch's grade: use it with --patch FILE")
    if args.backend != "local":
        raise ConfigError("--backend grades a patch on a copy: use it with --patch FILE or --tasks")
    return evaluate.cmd_grade(args)


@functools.cache
def _announce_once(mechanism: Mechanism, quiet: bool) -> None:
    """Name the mechanism before the first case runs: a patch that does not apply runs none."""
    announce(mechanism, quiet=quiet)


def _run_options(args: argparse.Namespace) -> list[str]:
    """What each grade of a run is given. Refused here, once, when no mechanism works or Docker
    does not answer; each grade names its mechanism in its grade.log. In a container the
    mechanism is chosen there: this machine's may not work inside."""
    if args.backend == "docker":
        from ssebench.core.backends import docker

        docker.check_docker(docker.docker_cli())
        return ["--backend", "docker", *isolation_flags(args.isolation)]
    return isolation_flags(choose_isolation(args.isolation).name)


def _grader(backend: str, options: list[str]) -> Callable[[Path], str | None]:
    """How a task's grades run, as result.json records it (a verdict is reused only when this
    is the same): the flags given to each grade and, in Docker, the ID of the task's image, so
    a verdict from another isolation, or from a rebuilt image under the same tag, is not."""
    how = " ".join(["with", *options]) if options else "locally"
    if backend != "docker":
        return lambda folder: how

    def in_image(folder: Path) -> str | None:
        from ssebench.core.backends import docker

        try:
            task = load_task(folder, build_registry().checks)
            if task.image is None:
                return None
            return f"{how}, image {docker.image_id(docker.docker_cli(), task.image)}"
        except ConfigError:
            return None  # the grade says why: nothing to compare with, nothing reused

    return in_image


def run_on_copy(
    task: Task,
    patch: bytes | None,
    registry: Registry,
    progress: Progress,
    *,
    mechanism: Mechanism,
    quiet: bool = False,
    log_dir: Path | None = None,
    every_case: bool = False,
    logs: Path | None = None,
) -> Outcome | None:
    """Every check the task has, on a scratch copy of its source with `patch` applied (None:
    as shipped), its cases confined by `mechanism`. PatchError when it does not apply; None
    after an internal failure."""
    from ssebench.core.daemons.inprocess import local_daemon
    from ssebench.core.grade import save_logs
    from ssebench.core.orchestrator import run_checks
    from ssebench.daemon.scratch import patched_copy

    try:
        with patched_copy(task, patch) as copy:
            _announce_once(mechanism, quiet)

            async def job() -> Outcome:
                async with local_daemon(
                    copy, registry, None, mechanism=mechanism, log_dir=log_dir
                ) as daemon:
                    outcome = await run_checks(
                        registry.checks,
                        None,
                        daemon,
                        coverage=False,
                        every_case=every_case,
                        progress=progress,
                    )
                    if logs is not None:
                        await save_logs(daemon, outcome, logs)
                    return outcome

            return evaluate.run_job(job)
    except OSError as exc:  # the copy itself: a full disk, say
        internal_failure(f"cannot make a scratch copy of {task.source}: {exc}")
        return None


def logs_folder(path: Path | None) -> Path | None:
    """The folder `--logs` names, made now: a folder that cannot hold the logs is one line
    before anything runs, not an error after the whole grade."""
    if path is None:
        return None
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ConfigError(f"--logs {path}: not a folder") from None
    except OSError as exc:
        raise ConfigError(f"--logs {path}: cannot make the folder: {exc.strerror or exc}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"--logs {path}: cannot write in this folder")
    return path


def _grade_patch(args: argparse.Namespace) -> int:
    from ssebench.core.grade import patched_grade_json
    from ssebench.daemon.scratch import read_patch

    if args.task is None:
        raise ConfigError("--patch grades a pristine copy of a task: use it with --task DIR")
    registry = build_registry()
    task = load_task(args.task, registry.checks)
    patch = read_patch(args.patch)
    args.logs = logs_folder(args.logs)
    try:
        answer = (_docker_grade if args.backend == "docker" else _local_grade)(
            task, patch, registry, args
        )
    except PatchError as exc:
        print(f"ssebench: the patch does not apply: {exc}", file=sys.stderr)
        answer = patched_grade_json(None, str(exc))
    if isinstance(answer, int):
        return answer
    print(json.dumps(answer, indent=2))
    return EXIT_OK if answer["resolved"] else EXIT_FAILED


def _local_grade(
    task: Task, patch: bytes, registry: Registry, args: argparse.Namespace
) -> dict[str, Any] | int:
    from ssebench.core.grade import patched_grade_json

    mechanism = choose_isolation(args.isolation, task, copy=True)
    progress = evaluate.stderr_progress(args.quiet)
    outcome = run_on_copy(
        task, patch, registry, progress, mechanism=mechanism, quiet=args.quiet, logs=args.logs
    )
    return EXIT_INTERNAL if outcome is None else patched_grade_json(outcome, None)


def _docker_grade(
    task: Task, patch: bytes, registry: Registry, args: argparse.Namespace
) -> dict[str, Any] | int:
    from ssebench.core.backends import docker

    return docker.grade_patch(
        task, patch, logs=args.logs, isolation=args.isolation, quiet=args.quiet
    )


def cmd_validate(args: argparse.Namespace) -> int:
    from ssebench.core.validation import (
        FIXED,
        SHIPPED,
        judge_task,
        validation_json,
        validation_table,
    )
    from ssebench.daemon.scratch import read_patch

    registry = build_registry()
    task = load_task(args.task, registry.checks)
    fix = read_patch(args.fix)
    logs = logs_folder(args.logs)
    mechanism = choose_isolation(args.isolation, task, copy=True)
    runs: dict[str, list[Outcome]] = {SHIPPED: [], FIXED: []}
    fix_error = None
    for run in range(1, args.runs + 1):
        for side, patch in ((SHIPPED, None), (FIXED, fix)):
            if patch is not None and fix_error is not None:
                continue  # it did not apply in the first run; it will not in this one
            progress = evaluate.stderr_progress(args.quiet, f"run {run} of {args.runs}, {side}: ")
            kept = logs / f"run-{run}" / side.replace(" ", "-") if logs is not None else None
            try:
                outcome = run_on_copy(
                    task, patch, registry, progress, mechanism=mechanism, quiet=args.quiet,
                    every_case=True, logs=kept,
                )  # fmt: skip
            except PatchError as exc:
                fix_error = str(exc)
                continue
            if outcome is None:
                return EXIT_INTERNAL
            runs[side].append(outcome)
    validation = judge_task(runs[SHIPPED], runs[FIXED], fix_error)
    if args.json:
        print(json.dumps(validation_json(validation), indent=2))
    else:
        print(validation_table(validation))
    return EXIT_OK if validation.sound else EXIT_FAILED


def _check_run_flags(args: argparse.Namespace) -> None:
    if args.patch is not None or args.logs is not None:
        raise ConfigError("--patch and --logs grade one task: use them with --task DIR")
    if args.predictions is None or args.out is None:
        raise ConfigError("--tasks needs --predictions FILE and --out DIR")
    if not args.tasks.is_dir():
        raise ConfigError(f"{args.tasks}: no such folder of tasks")
    if shutil.which("git") is None:
        raise ConfigError("grading patches needs git (`git apply`); install git")


def _grade_run(args: argparse.Namespace) -> int:
    from ssebench.core.batch import ERROR, grade_all, summary_name
    from ssebench.core.cli.batch_progress import batch_report
    from ssebench.core.cli.run import SSEBENCH
    from ssebench.core.predictions import in_shard, parse_shard, read_predictions

    _check_run_flags(args)
    shard = parse_shard(args.shard) if args.shard is not None else None
    items = [item for item in read_predictions(args.predictions) if in_shard(item, shard)]
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{args.out}: cannot make the output folder: {exc.strerror}") from None
    options = _run_options(args)
    verdicts = 0  # kept in OUT so far: graded now or reused

    async def main() -> list[Graded]:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        with batch_report(len(items), args.predictions) as report:

            def graded(one: Graded) -> None:
                nonlocal verdicts
                verdicts += one.verdict != ERROR
                report(one)

            return await grade_all(
                items,
                args.tasks,
                args.out,
                jobs=args.jobs or 1,
                command=SSEBENCH,
                options=options,
                timeout=args.timeout,
                grader=_grader(args.backend, options),
                on_graded=graded,
            )

    try:
        graded = asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError) as exc:
        print(
            f"ssebench: stopped: {verdicts} of {len(items)} predictions have a verdict in "
            f"{args.out}; run the same command again to grade the other {len(items) - verdicts}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED if isinstance(exc, KeyboardInterrupt) else EXIT_TERMINATED
    return _finish_run(graded, args.out / summary_name(shard))


def _finish_run(graded: list[Graded], path: Path) -> int:
    """summary.json, also on stdout, and the tally on stderr: what the run comes to."""
    from ssebench.core.batch import summarize, write_json

    summary = summarize(graded)
    try:
        write_json(path, summary)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write the summary: {exc.strerror or exc}") from None
    print(json.dumps(summary, indent=2))
    reused = sum(one.reused for one in graded)
    print(
        f"ssebench: {summary['total']} predictions: {summary['resolved']} resolved, "
        f"{summary['unresolved']} unresolved, {summary['errors']} errors; {reused} reused from "
        f"an earlier run ({path})",
        file=sys.stderr,
    )
    return EXIT_OK if not summary["errors"] else EXIT_FAILED
