"""The `ssebench` command line: one-line errors, exit statuses that scripts can rely on."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ssebench.core.levels import LevelError, parse_level
from ssebench.core.registry import PluginError, Registry, build_registry
from ssebench.core.settings import (
    DAEMON_API_HELP,
    DAEMON_APIS,
    ConfigError,
    Settings,
    load_settings,
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


SERVE_HELP = (
    "serve test_patch over MCP (Streamable HTTP at /mcp) with an embedded daemon (--task), "
    "or in sidecar mode against a daemon elsewhere (--daemon-url)"
)
RUN_HELP = (
    "the container entrypoint: start the server, wait until it answers, run CMD, stop the "
    "server, exit with CMD's status"
)
CONFIG_HELP = "print the ready-to-paste registration of the ssebench MCP server for an agent"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _level_flag(raw: str) -> str:
    try:
        parse_level(raw, variable="--difficulty")
    except LevelError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--difficulty ")) from None
    return raw


GRADE_HELP = (
    "the evaluator's run: every check the task has, whatever the level, functional tests "
    "included; JSON on stdout; exit 0 when resolved"
)


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
    grade = sub.add_parser("grade", help=GRADE_HELP, description=GRADE_HELP)
    where = grade.add_mutually_exclusive_group()
    where.add_argument("--task", type=Path, help="task folder or its task.toml")
    where.add_argument("--daemon-url", help="grade through a running daemon instead")
    grade.add_argument(
        "--daemon-api",
        choices=DAEMON_APIS,
        default="auto",
        help=f"with --daemon-url: {DAEMON_API_HELP}",
    )
    grade.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    sub.add_parser(
        "plugins", help="list the discovered checks", description="list the discovered checks"
    )
    daemon = task_command("daemon", "run the daemon alone")
    daemon.add_argument("--host", default="127.0.0.1")
    daemon.add_argument("--port", type=int, default=3001)
    daemon.add_argument(
        "--difficulty", type=_level_flag, help="level 0-4 (default: SSE_DIFFICULTY or 2)"
    )
    _serve_flags(sub.add_parser("serve", help=SERVE_HELP, description=SERVE_HELP))
    run = sub.add_parser("run", help=RUN_HELP, description=RUN_HELP)
    _serve_flags(run)
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD...")
    config = sub.add_parser("mcp-config", help=CONFIG_HELP, description=CONFIG_HELP)
    config.add_argument("agent", choices=("claude", "codex", "json"))
    return parser


def _serve_flags(cmd: argparse.ArgumentParser) -> None:
    where = cmd.add_mutually_exclusive_group()
    where.add_argument("--task", type=Path, help="task folder or its task.toml (embedded daemon)")
    where.add_argument(
        "--daemon-url", help="sidecar mode: the daemon's URL, no embedded daemon (SSE_DAEMON_URL)"
    )
    cmd.add_argument(
        "--daemon-api",
        choices=DAEMON_APIS,
        help=f"sidecar mode: {DAEMON_API_HELP}",
    )
    cmd.add_argument("--host", default="127.0.0.1", help="MCP address (default 127.0.0.1)")
    cmd.add_argument("--port", type=int, default=3000, help="MCP port (default 3000)")
    cmd.add_argument(
        "--daemon-port", type=int, default=3001, help="embedded daemon's port on 127.0.0.1"
    )
    cmd.add_argument(
        "--difficulty", type=_level_flag, help="level 0-4 (default: SSE_DIFFICULTY or 2)"
    )
    cmd.add_argument(
        "--allow-remote", action="store_true", help="allow a --host that is not loopback"
    )
    cmd.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another Host header to accept, e.g. a container name (repeatable)",
    )


def main(argv: Sequence[str] | None = None) -> None:
    # httpx imports its own command line (click, rich, pygments: ~150 ms) when they are
    # installed, as fastmcp's dependencies are; we never use it, and httpx copes without it.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
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


def cmd_check(args: argparse.Namespace) -> int:
    from ssebench.core.connect import local_daemon
    from ssebench.core.orchestrator import run_test_patch
    from ssebench.core.report import HEADLINE, INTERNAL_FAILURE

    settings, registry = _setup(args, SSE_DIFFICULTY=args.difficulty)

    async def job() -> str:
        async with local_daemon(args.task, registry, settings.difficulty) as daemon:
            return await run_test_patch(
                registry.checks,
                settings.difficulty,
                daemon,
                settings.log_dir,
                progress=_stderr_progress(args.quiet),
            )

    try:
        text = asyncio.run(job())
    except (ConfigError, PluginError):
        raise
    except Exception as exc:
        # What test_patch would answer; the cause is ours to read, on stderr.
        print(f"ssebench: internal testing failure: {type(exc).__name__}: {exc}", file=sys.stderr)
        text = INTERNAL_FAILURE
    print(text)
    if text == INTERNAL_FAILURE:
        return EXIT_INTERNAL
    return EXIT_FAILED if text.startswith(f"{HEADLINE} FAILED.") else EXIT_OK


def cmd_grade(args: argparse.Namespace) -> int:
    from ssebench.core.connect import local_daemon, open_daemon, unsupported_warning
    from ssebench.core.grade import grade_json
    from ssebench.core.orchestrator import run_checks

    settings, registry = _setup(args)
    if args.task is None and args.daemon_url is None and settings.daemon_url is None:
        raise ConfigError("grade needs --task DIR, or --daemon-url URL for a running daemon")
    progress = _stderr_progress(args.quiet)

    async def job() -> Any:
        if args.task is not None:
            async with local_daemon(args.task, registry, None) as daemon:
                return await run_checks(
                    registry.checks, None, daemon, coverage=False, progress=progress
                )
        url = args.daemon_url or settings.daemon_url
        async with open_daemon(args.daemon_api, url, grading=True) as remote:
            print(f"ssebench: daemon: {remote.description}", file=sys.stderr)
            if names := remote.unsupported(registry.checks):
                print(f"ssebench: warning: {unsupported_warning(names)}", file=sys.stderr)
            return await run_checks(
                registry.checks, None, remote, coverage=False, progress=progress
            )

    try:
        outcome = asyncio.run(job())
    except (ConfigError, PluginError):
        raise
    except Exception as exc:
        print(f"ssebench: internal testing failure: {type(exc).__name__}: {exc}", file=sys.stderr)
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


def _is_loopback(host: str) -> bool:
    import ipaddress

    try:
        return host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _serve_plan(args: argparse.Namespace) -> tuple[Settings, Registry, Any]:
    """Everything serve checks before it binds: settings, plugins, task, address. One line each."""
    from ssebench.core.connect import daemon_location
    from ssebench.daemon.task import load_task

    settings, registry = _setup(
        args, SSE_DIFFICULTY=args.difficulty, SSE_DAEMON_URL=args.daemon_url
    )
    task = None
    if args.task is not None:
        if args.daemon_api is not None:
            raise ConfigError("--daemon-api is for sidecar mode; --task runs our own daemon")
        task = load_task(args.task, registry.checks)
    elif daemon_location(settings.daemon_url) is None:
        raise ConfigError(
            "serve needs --task DIR (embedded daemon), or a daemon to talk to: --daemon-url URL, "
            "SSE_DAEMON_URL, SSE_DAEMON_SOCKET or SSE_AGENT_DOCKER"
        )
    elif settings.daemon_url and not settings.daemon_url.startswith(("http://", "https://")):
        raise ConfigError(f"SSE_DAEMON_URL must be an http:// URL (got {settings.daemon_url!r})")
    if not _is_loopback(args.host) and not args.allow_remote:
        raise ConfigError(
            f"--host {args.host} is not a loopback address; pass --allow-remote to expose "
            "test_patch beyond this machine"
        )
    return settings, registry, task


class _LevelPrefix(logging.Formatter):
    """`ssebench: warning: ...`, `ssebench: error: ...`, like the CLI's own one-line messages."""

    def format(self, record: logging.LogRecord) -> str:
        prefix = "" if record.levelno < logging.WARNING else f"{record.levelname.lower()}: "
        return f"ssebench: {prefix}{super().format(record)}"


@contextlib.contextmanager
def _loading() -> Iterator[None]:
    """Import without the cycle collector, then freeze what was loaded out of its scans.

    Imports make long-lived objects only, yet each full collection walks all of them: ~70 ms
    of a server's start-up, and later ~50 ms pauses inside calls. Frozen, they are never
    walked again.
    """
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def cmd_serve(args: argparse.Namespace) -> int:
    settings, registry, task = _serve_plan(args)  # refused before the server's imports
    with _loading():
        from ssebench.core import server

    # Causes of internal failures go to our stderr, never to the agent; library chatter stays out.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LevelPrefix())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    logging.getLogger("ssebench").setLevel(logging.INFO)
    if not _is_loopback(args.host):
        print(
            f"ssebench: warning: serving test_patch on {args.host}, reachable from other "
            "machines; the Host and Origin checks stay on (--allowed-host adds names)",
            file=sys.stderr,
        )
    where = f"task {task.path}" if task is not None else "sidecar mode"
    url = f"http://{_url_host(args.host)}:{args.port}{server.MCP_PATH}"
    listen = [(args.host, args.port)] + ([("127.0.0.1", args.daemon_port)] if task else [])
    sockets = []
    for host, port in listen:
        try:
            sockets.append(server.bind(host, port))
        except OSError as exc:
            for sock in sockets:
                sock.close()
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    asyncio.run(
        server.serve_test_patch(
            registry=registry,
            level=settings.difficulty,
            log_dir=settings.log_dir,
            task=task,
            sockets=sockets,
            daemon_api=args.daemon_api or "auto",
            daemon_url=settings.daemon_url,
            allowed_hosts=args.allowed_host,
            ready=f"ssebench: serving test_patch at {url} "
            f"(difficulty {settings.difficulty}, {where})",
        )
    )
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    import os

    from ssebench.core import entrypoint

    command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not command:
        raise ConfigError("run needs a command after --, e.g. ssebench run --task DIR -- agent")
    # The server would refuse the same settings, but checking here never starts it at all.
    settings, _, _ = _serve_plan(args)
    serve_argv = [
        *(["--task", str(args.task)] if args.task else []),
        *(["--daemon-url", args.daemon_url] if args.daemon_url else []),
        *(["--daemon-api", args.daemon_api] if args.daemon_api else []),
        *["--host", args.host, "--port", str(args.port), "--daemon-port", str(args.daemon_port)],
        *(["--allow-remote"] if args.allow_remote else []),
        *(arg for name in args.allowed_host for arg in ("--allowed-host", name)),
    ]
    env = dict(os.environ)
    if args.difficulty is not None:
        env["SSE_DIFFICULTY"] = args.difficulty
    # An unspecified address listens on loopback too; the guard accepts 127.0.0.1 as Host.
    probe = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(args.host, args.host)
    url = f"http://{_url_host(probe)}:{args.port}/mcp"
    return entrypoint.run(serve_argv, command, url, settings.mcp_timeout, env)


def cmd_mcp_config(args: argparse.Namespace) -> int:
    from ssebench.core.entrypoint import registration

    print(registration(args.agent))
    return EXIT_OK


COMMANDS = {
    "check": cmd_check,
    "grade": cmd_grade,
    "plugins": cmd_plugins,
    "daemon": cmd_daemon,
    "serve": cmd_serve,
    "run": cmd_run,
    "mcp-config": cmd_mcp_config,
}
