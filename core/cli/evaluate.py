"""Testing a tree from the command line: `check` (what test_patch says), `grade` (the evaluator's
verdict) and `plugins` (which checks there are). No MCP and no port: the daemon runs in-process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ssebench.core.cli import root
from ssebench.core.cli.isolation import announce
from ssebench.core.cli.parser import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK
from ssebench.core.errors import ConfigError
from ssebench.core.orchestrator import Progress
from ssebench.core.registry import build_registry
from ssebench.core.report import HEADLINE, INTERNAL_FAILURE, internal_failure

T = TypeVar("T")


def stderr_progress(quiet: bool, prefix: str = "") -> Progress:
    async def progress(done: float, total: float, message: str) -> None:
        if not quiet:
            print(f"ssebench: {prefix}{message}", file=sys.stderr, flush=True)

    return progress


def run_job(job: Callable[[], Coroutine[Any, Any, T]]) -> T | None:
    """Run `job`; a failure of testing itself is logged as an internal failure and gives None.

    A bad task or setting is still the user's: ConfigError goes on to a one-line error.
    """
    try:
        return asyncio.run(job())
    except ConfigError:
        raise
    except Exception as exc:
        internal_failure(exc)
        return None


def cmd_check(args: argparse.Namespace) -> int:
    from ssebench.core.daemons.local import log_owner
    from ssebench.core.orchestrator import run_test_patch

    setup = root.setup(args)
    settings, task = setup.settings, setup.task
    assert task is not None  # --task is required
    announce(setup.mechanism, quiet=args.quiet)

    async def job() -> str:
        async with root.open_daemon(setup, settings.difficulty) as daemon:
            return await run_test_patch(
                setup.registry.checks,
                settings.difficulty,
                daemon,
                settings.log_dir,
                progress=stderr_progress(args.quiet),
                log_owner=log_owner(task.source),
            )

    text = run_job(job) or INTERNAL_FAILURE
    print(text)
    if text == INTERNAL_FAILURE:
        return EXIT_INTERNAL
    return EXIT_FAILED if text.startswith(f"{HEADLINE} FAILED.") else EXIT_OK


def cmd_grade(args: argparse.Namespace) -> int:
    from ssebench.core.check import Outcome
    from ssebench.core.grade import grade_json
    from ssebench.core.orchestrator import run_checks

    setup = root.setup(args)
    if setup.task is None and setup.settings.daemon_url is None:
        raise ConfigError("grade needs --task DIR, or --daemon-url URL for a running daemon")
    progress = stderr_progress(args.quiet)
    announce(setup.mechanism, quiet=args.quiet)

    async def job() -> Outcome:
        async with root.open_daemon(setup, None, api=args.daemon_api, grading=True) as daemon:
            return await run_checks(
                setup.registry.checks, None, daemon, coverage=False, progress=progress
            )

    outcome = run_job(job)
    if outcome is None:
        return EXIT_INTERNAL
    answer = grade_json(outcome)
    print(json.dumps(answer, indent=2))
    return EXIT_OK if answer["resolved"] else EXIT_FAILED


def cmd_plugins(args: argparse.Namespace) -> int:
    registry = build_registry()
    print(f"{'order':>5}  {'check':<20} {'key':<12} {'levels':<7} {'precedence':>10}  source")
    for check in registry.checks:
        levels = f"0-{check.max_level}" if check.max_level else "0"
        print(
            f"{check.order:>5}  {check.name:<20} {check.key:<12} {levels:<7} "
            f"{check.precedence:>10}  {registry.sources[check.key]}"
        )
    return EXIT_OK
