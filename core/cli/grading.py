"""`grade`, the evaluator's verdict, in four modes, each an entry of its own: a benchmark run's
predictions (`--tasks`, core/cli/batchrun.py), a patch on a pristine copy (`--patch`), the
tree where it is in a fresh container of the task's image (`--fresh-container`), and the tree
in place (core/cli/evaluate.py). A patch's and a fresh container's grade run from a typed
request (core/cli/requests.py), which another ssebench may send instead of the flags."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
from pathlib import Path

from ssebench.core.check import Outcome
from ssebench.core.cli import evaluate
from ssebench.core.cli.parser import EXIT_FAILED, EXIT_OK
from ssebench.core.cli.requests import Basis, GradeFreshRequest, GradePatchRequest
from ssebench.core.cli.root import Root
from ssebench.core.errors import ConfigError, PatchError
from ssebench.core.orchestrator import Progress
from ssebench.core.toolfiles import Graft
from ssebench.evaluate.verdicts import PatchGrade, dump

CONTAINER_MARKS = ("/.dockerenv", "/run/.containerenv")  # Docker's, Podman's
_RUN_FLAGS = {  # the flags of a benchmark run (grade --tasks)
    "predictions": "--predictions",
    "out": "--out",
    "jobs": "-j",
    "shard": "--shard",
    "timeout": "--timeout",
    "run_id": "--run-id",
    "rejudge": "--rejudge",
}


def cmd_grade(args: argparse.Namespace, root: Root) -> int:
    """The mode the flags ask for; a flag of another mode is one line."""
    if args.tasks is not None and args.rejudge:
        from ssebench.core.cli.rejudging import rejudge_run

        return rejudge_run(args, root)
    if args.tasks is not None:
        from ssebench.core.cli.batchrun import grade_run

        return grade_run(args, root)
    given = [flag for name, flag in _RUN_FLAGS.items() if getattr(args, name) not in (None, False)]
    if given:
        raise ConfigError(f"{given[0]} grades a benchmark run: use it with --tasks DIR")
    if args.fresh_container:
        return printed(grade_fresh(root, fresh_request(args, root)))
    if args.patch is not None:
        return printed(grade_patch(root, patch_request(args, root)))
    if args.logs is not None:
        raise ConfigError("--logs saves the logs of a patch's grade: use it with --patch FILE")
    if args.every_case:
        raise ConfigError("--every-case grades a patch: use it with --patch FILE")
    if args.backend != "local":
        raise ConfigError("--backend grades a patch on a copy: use it with --patch FILE or --tasks")
    return evaluate.grade_in_place(args, root)


def printed(verdict: PatchGrade) -> int:
    """The verdict on stdout, as the evaluator reads it; exit 0 when resolved."""
    print(json.dumps(dump(verdict), indent=2))
    return EXIT_OK if verdict.resolved else EXIT_FAILED


def patch_request(args: argparse.Namespace, root: Root) -> GradePatchRequest:
    if args.task is None:
        raise ConfigError("--patch grades a pristine copy of a task: use it with --task DIR")
    return GradePatchRequest(
        basis=root.basis, patch=args.patch, logs=args.logs, backend=args.backend,
        every_case=args.every_case, quiet=args.quiet,
    )  # fmt: skip


def fresh_request(args: argparse.Namespace, root: Root) -> GradeFreshRequest:
    if args.task is None or args.patch is not None or args.backend != "local":
        raise ConfigError(
            "--fresh-container grades the task's tree where it is, in a fresh container of "
            "its image (--backend docker starts one): use it with --task DIR alone"
        )
    return GradeFreshRequest(
        basis=root.basis, logs=args.logs, every_case=args.every_case, quiet=args.quiet
    )


def grade_patch(root: Root, request: GradePatchRequest) -> PatchGrade:
    """The patch's verdict on a pristine copy of the task's tree, here or in its image. A patch
    that does not apply is unresolved; a grade that gave no verdict raises NoVerdict."""
    from ssebench.core.daemons.door import read_patch
    from ssebench.evaluate.grade import patched_grade, reviewed
    from ssebench.evaluate.signals import find_signals
    from ssebench.evaluate.watch import watch_for

    task = root.task
    assert task is not None
    here = task
    patch = read_patch(request.patch)
    logs = logs_folder(request.logs)
    if request.backend == "docker":
        from ssebench.evaluate.backends import docker

        graded = docker.in_image(task)
        here = graded.here  # its tree as this machine reads it
    signals = find_signals(patch, watch_for(here))  # read as data: before anything runs
    graft = Graft()
    try:
        if request.backend == "docker":
            container = in_container(root, logs, every_case=request.every_case,
                                     quiet=request.quiet)  # fmt: skip
            verdict = docker.grade_in_image(graded, patch, container, graft=graft)
        else:
            root.mechanism()  # refused in one line before a copy is made
            progress = evaluate.stderr_progress(request.quiet)
            outcome = run_on_copy(
                root, patch, progress, quiet=request.quiet, logs=logs, graft=graft,
                every_case=request.every_case,
            )  # fmt: skip
            verdict = patched_grade(outcome, None)
    except PatchError as exc:
        print(f"ssebench: the patch does not apply: {exc}", file=sys.stderr)
        verdict = patched_grade(None, str(exc))
    return reviewed(verdict, graft, signals)


def in_container(
    root: Root, logs: Path | None, *, every_case: bool, quiet: bool
) -> GradeFreshRequest:
    """What the grade in a fresh container of the task's image is asked: the task as the image
    has it, the isolation asked for, chosen there (this machine's may not work inside), the
    container's own settings, and the logs where Docker mounts them (absolute paths only)."""
    assert root.task is not None
    basis = Basis(task=root.task.path, isolation=root.basis.isolation, tree_mb=root.basis.tree_mb)
    logs = logs.resolve() if logs is not None else None
    return GradeFreshRequest(basis=basis, logs=logs, every_case=every_case, quiet=quiet)


def run_on_copy(
    root: Root,
    patch: bytes | None,
    progress: Progress,
    *,
    quiet: bool = False,
    every_case: bool = False,
    logs: Path | None = None,
    graft: Graft | None = None,
    fresh_container: bool = False,
) -> Outcome:
    """Every check the root's task has, on a scratch copy of its source with `patch` applied
    (None: as shipped) and kept to the grade's rules (what was done added to `graft`); in a fresh
    container (`fresh_container`), on the tree where it is. PatchError when it does not apply;
    NoVerdict after an internal failure."""
    from ssebench.core.daemons.door import patched_copy
    from ssebench.core.orchestrator import run_checks
    from ssebench.evaluate.grade import save_logs

    task = root.task
    assert task is not None
    graded = (
        contextlib.nullcontext(task.source) if fresh_container else patched_copy(task, patch, graft)
    )
    try:
        with graded as copy:
            root.announce(quiet=quiet)

            async def job() -> Outcome:
                async with root.open_daemon(None, tree=copy, take_over=fresh_container) as daemon:
                    outcome = await run_checks(
                        root.registry.checks,
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
        why = f"cannot make a scratch copy of {task.source}: {exc}"
        raise evaluate.failed_testing(why) from None


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


def _mount_point(path: Path) -> bool:
    """Whether `path` is where something is mounted (a bind mount of the same file system
    too, which a look at st_dev would miss), as /proc/self/mountinfo lists them."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return os.path.ismount(path)
    octal = re.compile(r"\\([0-7]{3})")  # the kernel writes a space as \040, and so on
    points = {octal.sub(lambda m: chr(int(m[1], 8)), line.split()[4]) for line in lines}
    return os.path.realpath(path) in points


def grade_fresh(root: Root, request: GradeFreshRequest) -> PatchGrade:
    """The grade inside a fresh container of the task's image (what --backend docker starts):
    the tree where it is, already patched, the container and its writable folders ours."""
    from ssebench.evaluate.grade import patched_grade

    task = root.task
    assert task is not None
    # It hands the tree and the writable folders to the case user: never a machine's own, so
    # only in a container, on a tree mounted there as --backend docker mounts it.
    if not any(os.path.exists(mark) for mark in CONTAINER_MARKS):
        raise ConfigError("--fresh-container: this is no container (no /.dockerenv)")
    if not _mount_point(task.source):
        raise ConfigError(
            f"--fresh-container: the task's tree {task.source} is no mount of its own, as "
            "--backend docker mounts the tree it grades: this grade would take it over"
        )
    logs = logs_folder(request.logs)
    root.mechanism()
    progress = evaluate.stderr_progress(request.quiet)
    outcome = run_on_copy(
        root, None, progress, quiet=request.quiet, every_case=request.every_case, logs=logs,
        fresh_container=True,
    )  # fmt: skip
    return patched_grade(outcome, None)
