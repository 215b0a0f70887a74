"""Testing a tree from the command line: `check` (what test_patch says), `grade` in place (the
evaluator's verdict on the tree as it is, or through a running daemon) and `plugins` (which
checks there are). No MCP and no port: a task's daemon runs in-process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ssebench.core.cli.parser import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK
from ssebench.core.cli.root import Root
from ssebench.core.errors import ConfigError, DaemonError, NoVerdict, PatchError
from ssebench.core.orchestrator import Progress
from ssebench.core.report import HEADLINE, INTERNAL_FAILURE, internal_failure

T = TypeVar("T")


def stderr_progress(quiet: bool, prefix: str = "") -> Progress:
    async def progress(done: float, total: float, message: str) -> None:
        if not quiet:
            print(f"ssebench: {prefix}{message}", file=sys.stderr, flush=True)

    return progress


def failed_testing(cause: BaseException | str) -> NoVerdict:
    """Testing itself failed: the cause goes to stderr (core/report.py), and the NoVerdict to
    raise carries it in one line (a bug of ours with its exception's type; its traceback is on
    stderr)."""
    internal_failure(cause)
    plain = isinstance(cause, str | DaemonError)
    why = cause if plain else f"{type(cause).__name__}: {cause}"
    return NoVerdict(EXIT_INTERNAL, f"internal testing failure: {why}")


def run_job(job: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run `job`; a failure of testing itself is said on stderr and raised as a NoVerdict.

    A bad task or setting is still the user's: ConfigError goes on to a one-line error.
    """
    try:
        return asyncio.run(job())
    except ConfigError:
        raise
    except Exception as exc:
        raise failed_testing(exc) from None


def cmd_check(args: argparse.Namespace, root: Root) -> int:
    from ssebench.core.daemons.door import log_owner
    from ssebench.core.orchestrator import run_test_patch

    settings, task = root.settings, root.task
    assert task is not None  # --task is required
    root.announce(quiet=args.quiet)

    async def job() -> str:
        async with root.open_daemon(settings.difficulty) as daemon:
            return await run_test_patch(
                root.registry.checks,
                settings.difficulty,
                daemon,
                settings.log_dir,
                progress=stderr_progress(args.quiet),
                log_owner=log_owner(task.source),
            )

    try:
        text = run_job(job)
    except NoVerdict:
        text = INTERNAL_FAILURE
    print(text)
    if text == INTERNAL_FAILURE:
        return EXIT_INTERNAL
    return EXIT_FAILED if text.startswith(f"{HEADLINE} FAILED.") else EXIT_OK


def grade_in_place(args: argparse.Namespace, root: Root) -> int:
    """`grade --task DIR` (the tree as it is) or `grade` through a running daemon (its tree;
    an upstream daemon's admin socket grades the agent's diff on a copy of its own)."""
    from ssebench.core.check import Outcome
    from ssebench.core.daemons.connect import daemon_location, where_daemons_are
    from ssebench.core.orchestrator import run_checks
    from ssebench.evaluate.grade import grade_json, patched_grade
    from ssebench.evaluate.verdicts import dump

    if root.task is None and daemon_location(root.settings.daemon_url, grading=True) is None:
        where = where_daemons_are(grading=True)
        raise ConfigError(f"grade needs --task DIR, or a daemon to grade through: {where}")
    progress = stderr_progress(args.quiet)
    root.announce(quiet=args.quiet)

    async def job() -> Outcome | PatchError:
        async with root.open_daemon(None, grading=True) as daemon:
            try:
                return await run_checks(
                    root.registry.checks, None, daemon, coverage=False, progress=progress
                )
            except PatchError as exc:  # the daemon's copy for grading: the diff did not apply
                return exc

    graded = run_job(job)
    if isinstance(graded, PatchError):
        answer = dump(patched_grade(None, str(graded)))
    else:
        answer = grade_json(graded)
    print(json.dumps(answer, indent=2))
    return EXIT_OK if answer["resolved"] else EXIT_FAILED


def cmd_plugins(args: argparse.Namespace, root: Root) -> int:
    registry = root.registry
    print(f"{'order':>5}  {'check':<20} {'key':<12} {'levels':<7} {'precedence':>10}  source")
    for check in registry.checks:
        levels = f"0-{check.max_level}" if check.max_level else "0"
        print(
            f"{check.order:>5}  {check.name:<20} {check.key:<12} {levels:<7} "
            f"{check.precedence:>10}  {registry.sources[check.key]}"
        )
    return EXIT_OK
