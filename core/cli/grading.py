"""The evaluator's commands: `grade` (in place, a patch on a pristine copy, or a benchmark
run's predictions) and `validate` (is a task sound before anyone runs an agent on it)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from ssebench.core.check import Outcome
from ssebench.core.cli import evaluate, root
from ssebench.core.cli.isolation import announce
from ssebench.core.cli.parser import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK
from ssebench.core.cli.root import Setup
from ssebench.core.daemons.local import Mechanism
from ssebench.core.errors import ConfigError, PatchError
from ssebench.core.orchestrator import Progress
from ssebench.core.report import internal_failure

CONTAINER_MARKS = ("/.dockerenv", "/run/.containerenv")  # Docker's, Podman's
_RUN_FLAGS = {  # the flags of a benchmark run (grade --tasks)
    "predictions": "--predictions",
    "out": "--out",
    "jobs": "-j",
    "shard": "--shard",
    "timeout": "--timeout",
}


def cmd_grade(args: argparse.Namespace) -> int:
    if args.tasks is not None:
        from ssebench.core.cli.batchrun import grade_run

        return grade_run(args)
    given = [flag for name, flag in _RUN_FLAGS.items() if getattr(args, name) is not None]
    if given:
        raise ConfigError(f"{given[0]} grades a benchmark run: use it with --tasks DIR")
    if args.fresh_container:
        return _grade_fresh(args)
    if args.patch is not None:
        return _grade_patch(args)
    if args.logs is not None:
        raise ConfigError("--logs saves the logs of a patch's grade: use it with --patch FILE")
    if args.every_case:
        raise ConfigError("--every-case grades a patch: use it with --patch FILE")
    if args.backend != "local":
        raise ConfigError("--backend grades a patch on a copy: use it with --patch FILE or --tasks")
    return evaluate.cmd_grade(args)


@functools.cache
def _announce_once(mechanism: Mechanism, quiet: bool) -> None:
    """Name the mechanism before the first case runs: a patch that does not apply runs none."""
    announce(mechanism, quiet=quiet)


def run_on_copy(
    setup: Setup,
    patch: bytes | None,
    progress: Progress,
    *,
    quiet: bool = False,
    every_case: bool = False,
    logs: Path | None = None,
    reverted: list[str] | None = None,
) -> Outcome | None:
    """Every check the setup's task has, on a scratch copy of its source with `patch` applied
    (None: as shipped) and its protected paths put back (added to `reverted`), its cases
    confined as the setup says; in a fresh container (`setup.fresh_container`), on the tree
    where it is. PatchError when it does not apply; None after an internal failure."""
    from ssebench.core.daemons.local import patched_copy
    from ssebench.core.grade import save_logs
    from ssebench.core.orchestrator import run_checks

    assert setup.task is not None
    graded = (
        contextlib.nullcontext(setup.task.source)
        if setup.fresh_container
        else patched_copy(setup.task, patch, reverted)
    )
    try:
        with graded as copy:
            if setup.mechanism is not None:
                _announce_once(setup.mechanism, quiet)
            on_copy = dataclasses.replace(setup, tree=copy)

            async def job() -> Outcome:
                async with root.open_daemon(on_copy, None) as daemon:
                    outcome = await run_checks(
                        setup.registry.checks,
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
        internal_failure(f"cannot make a scratch copy of {setup.task.source}: {exc}")
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
    from ssebench.core.daemons.local import read_patch
    from ssebench.core.grade import patched_grade_json, reviewed
    from ssebench.core.signals import find_signals
    from ssebench.core.watch import watch_for

    if args.task is None:
        raise ConfigError("--patch grades a pristine copy of a task: use it with --task DIR")
    setup = root.setup(args, confine=False)
    assert setup.task is not None
    patch = read_patch(args.patch)
    args.logs = logs_folder(args.logs)
    here = setup.task
    if args.backend == "docker":
        from ssebench.core.backends import docker

        graded = docker.in_image(setup.task)
        here = graded.here  # its tree as this machine reads it
    signals = find_signals(patch, watch_for(here))  # read as data: before anything runs
    reverted: list[str] = []
    try:
        if args.backend == "docker":
            answer = docker.grade_patch(graded, patch, logs=args.logs, isolation=args.isolation,
                                        quiet=args.quiet, reverted=reverted)  # fmt: skip
        else:
            answer = _local_grade(setup, patch, args, reverted)
    except PatchError as exc:
        print(f"ssebench: the patch does not apply: {exc}", file=sys.stderr)
        answer = patched_grade_json(None, str(exc))
    if isinstance(answer, int):
        return answer
    answer = reviewed(answer, reverted, signals)
    print(json.dumps(answer, indent=2))
    return EXIT_OK if answer["resolved"] else EXIT_FAILED


def _local_grade(
    setup: Setup, patch: bytes, args: argparse.Namespace, reverted: list[str]
) -> dict[str, Any] | int:
    from ssebench.core.grade import patched_grade_json

    setup = root.confined(setup, args.isolation)
    progress = evaluate.stderr_progress(args.quiet)
    outcome = run_on_copy(
        setup, patch, progress, quiet=args.quiet, logs=args.logs, reverted=reverted,
        every_case=args.every_case,
    )  # fmt: skip
    return EXIT_INTERNAL if outcome is None else patched_grade_json(outcome, None)


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


def _grade_fresh(args: argparse.Namespace) -> int:
    """The grade inside a fresh container of the task's image (what --backend docker starts):
    the tree where it is, already patched, the container and its writable folders ours."""
    from ssebench.core.grade import patched_grade_json

    if args.task is None or args.patch is not None or args.backend != "local":
        raise ConfigError(
            "--fresh-container grades the task's tree where it is, in a fresh container of "
            "its image (--backend docker starts one): use it with --task DIR alone"
        )
    setup = root.setup(args, confine=False)
    assert setup.task is not None
    # It hands the tree and the writable folders to the case user: never a machine's own, so
    # only in a container, on a tree mounted there as --backend docker mounts it.
    if not any(os.path.exists(mark) for mark in CONTAINER_MARKS):
        raise ConfigError("--fresh-container: this is no container (no /.dockerenv)")
    if not _mount_point(setup.task.source):
        raise ConfigError(
            f"--fresh-container: the task's tree {setup.task.source} is no mount of its own, as "
            "--backend docker mounts the tree it grades: this grade would take it over"
        )
    logs = logs_folder(args.logs)
    setup = dataclasses.replace(root.confined(setup, args.isolation), fresh_container=True)
    progress = evaluate.stderr_progress(args.quiet)
    outcome = run_on_copy(
        setup, None, progress, quiet=args.quiet, every_case=args.every_case, logs=logs
    )
    if outcome is None:
        return EXIT_INTERNAL
    answer = patched_grade_json(outcome, None)
    print(json.dumps(answer, indent=2))
    return EXIT_OK if answer["resolved"] else EXIT_FAILED
