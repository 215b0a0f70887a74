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

from ssebench.core.cli.isolation import announce, choose_isolation
from ssebench.core.cli.parser import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK
from ssebench.core.errors import ConfigError
from ssebench.core.orchestrator import Progress
from ssebench.core.registry import build_registry
from ssebench.core.report import HEADLINE, INTERNAL_FAILURE, internal_failure
from ssebench.core.settings import load_settings
from ssebench.daemon.task import load_task

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
    from ssebench.core.daemons.inprocess import local_daemon
    from ssebench.core.orchestrator import run_test_patch
    from ssebench.daemon.credentials import log_owner

    settings = load_settings(SSE_DIFFICULTY=args.difficulty)
    registry = build_registry()
    task = load_task(args.task, registry.checks)
    mechanism = choose_isolation(args.isolation, task)
    announce(mechanism, quiet=args.quiet)

    async def job() -> str:
        async with local_daemon(
            task, registry, settings.difficulty, mechanism=mechanism, log_dir=settings.log_dir
        ) as daemon:
            return await run_test_patch(
                registry.checks,
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
    from ssebench.core.daemons.connect import open_daemon, unsupported_warning
    from ssebench.core.daemons.inprocess import local_daemon
    from ssebench.core.grade import grade_json
    from ssebench.core.orchestrator import run_checks

    settings = load_settings()
    registry = build_registry()
    url = args.daemon_url or settings.daemon_url
    if args.task is None and url is None:
        raise ConfigError("grade needs --task DIR, or --daemon-url URL for a running daemon")
    progress = stderr_progress(args.quiet)
    task = load_task(args.task, registry.checks) if args.task is not None else None
    mechanism = choose_isolation(args.isolation, task) if task else None
    announce(mechanism, quiet=args.quiet)

    async def job() -> Outcome:
        if task is not None:
            async with local_daemon(
                task, registry, None, mechanism=mechanism, log_dir=settings.log_dir
            ) as daemon:
                return await run_checks(
                    registry.checks, None, daemon, coverage=False, progress=progress
                )
        async with open_daemon(args.daemon_api, url, grading=True) as remote:
            print(f"ssebench: daemon: {remote.description}", file=sys.stderr)
            if names := remote.unsupported(registry.checks):
                print(f"ssebench: warning: {unsupported_warning(names)}", file=sys.stderr)
            return await run_checks(
                registry.checks, None, remote, coverage=False, progress=progress
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
