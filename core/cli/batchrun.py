"""`grade --tasks`: a benchmark run's predictions graded, resumably, here or in each task's
image, each grade a process of its own asked by a typed request (evaluate/batch.py); the summary,
and a line on a stop."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ssebench.core.cli.parser import EXIT_FAILED, EXIT_OK
from ssebench.core.cli.requests import Basis, GradePatchRequest
from ssebench.core.cli.root import Root
from ssebench.core.daemons.door import is_confined, load_task
from ssebench.core.errors import ConfigError

if TYPE_CHECKING:
    from ssebench.evaluate.batch import Graded

EXIT_TERMINATED, EXIT_INTERRUPTED = 128 + signal.SIGTERM, 128 + signal.SIGINT


def run_basis(args: argparse.Namespace, root: Root) -> Basis:
    """What each grade (or validation) of a run is built from: this run's settings and the
    isolation it proved here, once (each names it in its log), or, in the task's image, the
    isolation asked for, chosen there: this machine's may not work inside. Refused here, once,
    when no mechanism works or Docker does not answer."""
    if args.backend == "docker":
        from ssebench.evaluate.backends import docker

        docker.check_docker(docker.docker_cli())
        return Basis(settings=root.settings, for_image=True, isolation=root.basis.isolation,
                     tree_mb=root.basis.tree_mb)  # fmt: skip
    return root.basis.model_copy(update={"mechanism": root.mechanism()})


def grader_for(backend: str, basis: Basis, root: Root) -> Callable[[Path], str | None]:
    """How a task's grades run, as result.json records it (a verdict is reused only when this
    is the same): confined or not and, in Docker, the ID of the task's image, so a verdict
    graded unconfined, or in an image rebuilt under the same tag, is graded again. Which
    mechanism confined it is not part of it: the shards of one run may run on machines that
    confine differently (Landlock in a pod, bubblewrap on the host that merges)."""
    how = "confined" if is_confined(basis.isolation) else "unconfined"
    if backend != "docker":
        return lambda folder: f"locally, {how}"

    def in_image(folder: Path) -> str | None:
        from ssebench.evaluate.backends import docker

        try:
            task = load_task(folder, root.registry.checks, for_image=True)
            if task.image is None:
                return None
            return f"in image {docker.image_id(docker.docker_cli(), task.image)}, {how}"
        except ConfigError:
            return None  # the grade says why: nothing to compare with, nothing reused

    return in_image


def grade_request(basis: Basis, backend: str) -> Callable[[Path, Path, Path], str]:
    """What each prediction's grade is asked: its patch file on its task, its logs there."""

    def request(task: Path, patch: Path, logs: Path) -> str:
        one = GradePatchRequest(basis=basis.model_copy(update={"task": task}), patch=patch,
                                logs=logs, backend=backend)  # fmt: skip
        return one.model_dump_json()

    return request


def _check_run_flags(args: argparse.Namespace) -> None:
    if args.patch is not None or args.logs is not None:
        raise ConfigError("--patch and --logs grade one task: use them with --task DIR")
    if args.predictions is None or args.out is None:
        raise ConfigError("--tasks needs --predictions FILE and --out DIR")
    if not args.tasks.is_dir():
        raise ConfigError(f"{args.tasks}: no such folder of tasks")
    if shutil.which("git") is None:
        raise ConfigError("grading patches needs git (`git apply`); install git")


def grade_run(args: argparse.Namespace, root: Root) -> int:
    from ssebench.core.cli.batch_progress import batch_report
    from ssebench.core.stopping import CHILD
    from ssebench.evaluate.batch import ERROR, grade_all
    from ssebench.evaluate.predictions import in_shard, parse_shard, read_predictions

    _check_run_flags(args)
    shard = parse_shard(args.shard) if args.shard is not None else None
    items = [item for item in read_predictions(args.predictions) if in_shard(item, shard)]
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{args.out}: cannot make the output folder: {exc.strerror}") from None
    basis = run_basis(args, root)
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
                command=CHILD,
                request=grade_request(basis, args.backend),
                timeout=args.timeout,
                grader=grader_for(args.backend, basis, root),
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
    return _finish_run(graded, args, shard)


def _finish_run(
    graded: list[Graded], args: argparse.Namespace, shard: tuple[int, int] | None
) -> int:
    """summary.json, also on stdout, index.html, and the tally on stderr: what the run comes to."""
    from ssebench.evaluate.batch import summary_name
    from ssebench.evaluate.runpage import render_page
    from ssebench.evaluate.runreport import summarize, task_ids
    from ssebench.evaluate.verdicts import write_json, write_whole

    tasks = task_ids(args.tasks)
    summary = summarize(graded, tasks, whole=shard is None)
    path, page = args.out / summary_name(shard), args.out / summary_name(shard, "index.html")
    title = f"ssebench: {args.predictions.name}"
    title += "" if shard is None else f", shard {shard[0]} of {shard[1]}"
    try:
        write_json(path, summary)
        write_whole(page, render_page(summary, graded, tasks, args.out, title))
    except OSError as exc:
        raise ConfigError(
            f"{exc.filename}: cannot write the run's report: {exc.strerror or exc}"
        ) from None
    print(json.dumps(summary, indent=2))
    reused = sum(one.reused for one in graded)
    print(
        f"ssebench: {summary['total']} predictions: {summary['resolved']} resolved, "
        f"{summary['unresolved']} unresolved, {summary['errors']} errors; {reused} reused from "
        f"an earlier run ({path})",
        file=sys.stderr,
    )
    return EXIT_OK if not summary["errors"] else EXIT_FAILED
