"""The `ssebench` command line: one-line errors, exit statuses that scripts can rely on."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ssebench.core.levels import LevelError, parse_level
from ssebench.core.registry import PluginError, Registry, build_registry
from ssebench.core.settings import ConfigError, Settings, load_settings

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _level_flag(raw: str) -> str:
    try:
        parse_level(raw, variable="--difficulty")
    except LevelError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--difficulty ")) from None
    return raw


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ssebench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def task_command(name: str, help: str) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=help, description=help)
        cmd.add_argument("--task", type=Path, required=True, help="task folder or its task.toml")
        return cmd

    check = task_command("check", "print exactly what test_patch would return, and exit 0/1/2/3")
    check.add_argument(
        "--difficulty", type=_level_flag, help="level 0-4 (default: SSE_DIFFICULTY or 2)"
    )
    check.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    task_command("grade", "the evaluator's run: every check the task has; JSON on stdout")
    sub.add_parser(
        "plugins", help="list the discovered checks", description="list the discovered checks"
    )
    daemon = task_command("daemon", "run the daemon alone")
    daemon.add_argument("--host", default="127.0.0.1")
    daemon.add_argument("--port", type=int, default=3001)
    daemon.add_argument(
        "--difficulty", type=_level_flag, help="level 0-4 (default: SSE_DIFFICULTY or 2)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        code = COMMANDS[args.command](args)
    except (ConfigError, PluginError) as exc:
        print(f"ssebench: error: {exc}", file=sys.stderr)
        code = EXIT_USAGE
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        # The reader (say, `head`) went away; what it did not read is not an error of ours.
        sys.stderr.close()
        code = EXIT_OK
    sys.exit(code)


def _setup(args: argparse.Namespace, **overrides: Any) -> tuple[Settings, Registry]:
    settings = load_settings(**overrides)
    return settings, build_registry()


def _stderr_progress(quiet: bool) -> Any:
    async def progress(done: float, total: float | None, message: str) -> None:
        if not quiet:
            print(f"ssebench: {message}", file=sys.stderr, flush=True)

    return progress


async def _with_local_daemon(
    task_path: Path, registry: Registry, level: int | None, job: Any
) -> Any:
    """The real daemon app in-process through httpx's ASGI transport: same HTTP path, no port."""
    import httpx

    from ssebench.core.client import HttpDaemon
    from ssebench.daemon.app import create_app
    from ssebench.daemon.task import load_task

    task = load_task(task_path, registry.checks)
    with tempfile.TemporaryDirectory(prefix="ssebench-logs-") as spool:
        app = create_app(task, registry, level, spool=Path(spool))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://daemon") as client:
            return await job(HttpDaemon(client))


def cmd_check(args: argparse.Namespace) -> int:
    from ssebench.core.orchestrator import run_test_patch
    from ssebench.core.report import HEADLINE, INTERNAL_FAILURE

    settings, registry = _setup(args, SSE_DIFFICULTY=args.difficulty)

    async def job(daemon: Any) -> str:
        return await run_test_patch(
            registry.checks,
            settings.difficulty,
            daemon,
            settings.log_dir,
            progress=_stderr_progress(args.quiet),
        )

    text = asyncio.run(_with_local_daemon(args.task, registry, settings.difficulty, job))
    print(text)
    if text == INTERNAL_FAILURE:
        return EXIT_INTERNAL
    return EXIT_FAILED if text.startswith(f"{HEADLINE} FAILED.") else EXIT_OK


def cmd_grade(args: argparse.Namespace) -> int:
    from ssebench.core.client import DaemonError
    from ssebench.core.grade import grade_json
    from ssebench.core.orchestrator import run_checks

    _, registry = _setup(args)

    async def job(daemon: Any) -> Any:
        return await run_checks(
            registry.checks, None, daemon, coverage=False, progress=_stderr_progress(False)
        )

    try:
        outcome = asyncio.run(_with_local_daemon(args.task, registry, None, job))
    except DaemonError as exc:
        print(f"ssebench: internal testing failure: {exc}", file=sys.stderr)
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


def cmd_daemon(args: argparse.Namespace) -> int:
    import uvicorn

    from ssebench.daemon.app import create_app
    from ssebench.daemon.task import load_task

    settings, registry = _setup(args, SSE_DIFFICULTY=args.difficulty)
    task = load_task(args.task, registry.checks)
    app = create_app(task, registry, settings.difficulty)
    print(
        f"ssebench: daemon for {task.path} at http://{args.host}:{args.port} "
        f"(difficulty {settings.difficulty})",
        file=sys.stderr,
    )
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return EXIT_OK


COMMANDS = {
    "check": cmd_check,
    "grade": cmd_grade,
    "plugins": cmd_plugins,
    "daemon": cmd_daemon,
}
