"""`grade --tasks`: a benchmark run's predictions graded, resumably, here or in each task's
image, each grade a process of its own asked by a typed request (evaluate/batch.py); the summary,
and a line on a stop."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

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


def grade_run(args: argparse.Namespace, root: Root) -> int:
    from ssebench.core.cli.batch_progress import batch_report
    from ssebench.core.cli.runfiles import finish_run, keep_run, read_run, run_settings
    from ssebench.core.stopping import CHILD
    from ssebench.evaluate.batch import ERROR, grade_all

    items, shard, record = read_run(args)
    basis = run_basis(args, root)
    keep_run(args, record)
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
    reused = sum(one.reused for one in graded)
    said = f"{reused} reused from an earlier run"
    return finish_run(graded, args, shard, record, run_settings(args, basis), said)
