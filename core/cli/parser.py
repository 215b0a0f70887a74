"""The command line's contract: every command, its flags, and the exit statuses scripts rely on."""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

from ssebench.core.cli.evalflags import (
    grading_flags,
    import_flags,
    isolation_flags,
    task_flag,
    validate_flags,
)
from ssebench.core.cli.flagrules import OnceParser, checked, url_host
from ssebench.core.levels import LevelError, parse_level
from ssebench.core.settings import (
    DAEMON_API_CHOICES,
    DAEMON_API_HELP,
    OLD_DAEMON_API,
    daemon_url,
    positive_seconds,
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
MCP_PORT, DAEMON_PORT = 3000, 3001
PUBLIC_HOST = "localhost"  # where an agent beside the server reaches it (mcp-config)

CHECK_HELP = "print exactly what test_patch would return, and exit 0/1/2/3"
GRADE_HELP = (
    "the evaluator's run: every check the task has, whatever the level, functional tests "
    "included; JSON on stdout; exit 0 when resolved. With --patch, on a scratch copy with "
    "the patch applied; with --tasks, a benchmark run's predictions"
)
SERVE_HELP = (
    "serve test_patch over MCP (Streamable HTTP at /mcp) with an embedded daemon (--task), "
    "or in sidecar mode against a daemon elsewhere (--daemon-url)"
)
RUN_HELP = (
    "the container entrypoint: start the server, wait until it answers, run CMD, stop the "
    "server, exit with CMD's status"
)
VALIDATE_HELP = (
    "is the task sound: as shipped it builds, passes its tests and every PoC triggers; with "
    "the fix every check passes; no case is flaky. Exit 0 when sound, 1 when not"
)
IMPORT_HELP = "write another benchmark's tasks as ssebench task folders, OUT/<id> each"
CONFIG_HELP = "print the ready-to-paste registration of the ssebench MCP server for an agent"
LEVEL_HELP = "level 0-4 (default: SSE_DIFFICULTY or 2)"
_NUMBER = re.compile(r"-[0-9]+|-[0-9]*\.[0-9]+")  # a negative number is a value, not a flag


class _Parser(OnceParser):
    """One-line errors, exit status 2; a misspelt flag is named before a required one it left
    missing (argparse would only say `--task` is required after `--taks DIR`); a flag given
    twice is refused (flagrules.py)."""

    _given: Sequence[str] = ()

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> None:  # type: ignore[override]
        unknown = self._unknown_flags()
        required = ("the following arguments are required", "one of the arguments")
        if unknown and message.startswith(required):
            message = f"unrecognized arguments: {', '.join(unknown)}"
        if message == "argument --shard: expected one argument":
            message = self._shard_rule() or message
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    def _shard_rule(self) -> str | None:
        """`--shard -1/3` reads to argparse as a flag after `--shard`: say the shard rule."""
        given = list(self._given)
        if "--shard" not in given[:-1]:
            return None
        from ssebench.core.errors import ConfigError
        from ssebench.evaluate.predictions import parse_shard

        try:
            parse_shard(given[given.index("--shard") + 1])
        except ConfigError as exc:
            return str(exc)
        return None

    def _unknown_flags(self) -> list[str]:
        """Each given flag this parser does not know, with the one it most likely meant."""
        known = [flag for flag in self._option_string_actions if flag.startswith("--")]
        found = []
        for arg in self._given[: self._given.index("--") if "--" in self._given else None]:
            flag = arg.split("=", 1)[0]
            if not flag.startswith("-") or _NUMBER.fullmatch(flag):
                continue  # a value, or a negative number
            if flag in self._option_string_actions or (
                flag.startswith("--") and any(k.startswith(flag) for k in known)
            ):
                continue  # known, or a prefix of one (argparse takes that)
            close = difflib.get_close_matches(flag, known, n=1)
            found.append(f"{arg} (did you mean {close[0]}?)" if close else arg)
        return found


def _level_flag(raw: str) -> str:
    try:
        parse_level(raw, variable="--difficulty")
    except LevelError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--difficulty ")) from None
    return raw


_seconds = checked(positive_seconds)
_daemon_url = checked(daemon_url)
GRADE_DAEMON_HELP = (
    "grade through a running daemon instead (unix:PATH for a socket; the upstream daemon "
    "grades through its admin socket, SSE_ADMIN_SOCKET)"
)


def _daemon_api(raw: str) -> str:
    """`--daemon-api`'s value; its old name for upstream is taken as upstream, with a warning:
    a script that says it keeps working, and learns the name to say."""
    if raw != OLD_DAEMON_API:
        return raw
    print(
        f"ssebench: warning: --daemon-api {OLD_DAEMON_API} is the old name of --daemon-api "
        "upstream; say upstream",
        file=sys.stderr,
    )
    return "upstream"


def _port(raw: str) -> int:
    if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) <= 65535):
        raise argparse.ArgumentTypeError(f"must be a port number from 1 to 65535 (got {raw!r})")
    return int(raw)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ssebench", description="ssebench: the test_patch MCP server")
    parser.add_argument("--version", action="version", version=f"ssebench {version('ssebench')}")
    # Not required: a bare `ssebench` prints the help, not argparse's complaint.
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help)

    check = command("check", CHECK_HELP)
    task_flag(check, required=True)
    check.add_argument("--difficulty", type=_level_flag, help=LEVEL_HELP)
    check.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    isolation_flags(check)
    grade = command("grade", GRADE_HELP)
    where = grade.add_mutually_exclusive_group()
    task_flag(where)
    where.add_argument("--daemon-url", type=_daemon_url, help=GRADE_DAEMON_HELP)
    grade.add_argument("--daemon-api", type=_daemon_api, choices=DAEMON_API_CHOICES,
                       default="auto", help=f"with --daemon-url: {DAEMON_API_HELP}")  # fmt: skip
    grade.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    isolation_flags(grade)
    grading_flags(grade, where)
    validate_flags(command("validate", VALIDATE_HELP))
    command("plugins", "list the discovered checks")
    import_flags(command("import", IMPORT_HELP))
    new = command("new", "write a commented skeleton task for an author to fill in")
    new.add_argument("dir", type=Path, metavar="DIR", help="the new task's folder")
    daemon = command("daemon", "run the daemon alone")
    task_flag(daemon, required=True)
    _address_flags(daemon, "daemon", DAEMON_PORT)
    daemon.add_argument("--difficulty", type=_level_flag, help=LEVEL_HELP)
    isolation_flags(daemon)
    serve_flags(command("serve", SERVE_HELP))
    run = command("run", RUN_HELP)
    serve_flags(run)
    _prediction_flags(run)
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD...")
    config = command("mcp-config", CONFIG_HELP)
    config.add_argument("agent", choices=("claude", "codex", "json"))
    config.add_argument(
        "--host", type=url_host, default=PUBLIC_HOST, help="the server's host as the agent "
        f"reaches it (default {PUBLIC_HOST})"
    )  # fmt: skip
    config.add_argument(
        "--port", type=_port, default=MCP_PORT, help=f"the server's port (default {MCP_PORT})"
    )
    return parser


def _prediction_flags(run: argparse.ArgumentParser) -> None:
    """The agent's result as a line of the predictions file a benchmark run grades."""
    run.add_argument(
        "--prediction-out",
        type=Path,
        metavar="FILE",
        help="when CMD ends, write the change to the task's tree as a prediction line "
        '({"task", "model", "patch"}) for grade --tasks',
    )
    run.add_argument("--model", help="with --prediction-out: its model (default: default)")
    run.add_argument(
        "--task-id", help="with --prediction-out: its task id (default: the task folder's name)"
    )


def serve_flags(cmd: argparse.ArgumentParser) -> None:
    isolation_flags(cmd)
    where = cmd.add_mutually_exclusive_group()
    where.add_argument("--task", type=Path, help="task folder or its task.toml (embedded daemon)")
    where.add_argument(
        "--daemon-url",
        type=_daemon_url,
        help="sidecar mode: the daemon's URL, no embedded daemon (SSE_DAEMON_URL)",
    )
    cmd.add_argument("--daemon-api", type=_daemon_api, choices=DAEMON_API_CHOICES,
                     help=f"sidecar mode: {DAEMON_API_HELP}")  # fmt: skip
    _address_flags(cmd, "MCP", MCP_PORT)
    cmd.add_argument(
        "--daemon-port",
        type=_port,
        default=DAEMON_PORT,
        help=f"embedded daemon's port on 127.0.0.1 (default {DAEMON_PORT})",
    )
    cmd.add_argument("--difficulty", type=_level_flag, help=LEVEL_HELP)
    cmd.add_argument(
        "--progress-interval",
        type=_seconds,
        metavar="SECONDS",
        help="longest quiet gap in a call's progress notifications "
        "(default: SSE_PROGRESS_INTERVAL or 15)",
    )


def _address_flags(cmd: argparse.ArgumentParser, what: str, port: int) -> None:
    """Where `serve` and `daemon` listen, and who may reach them: the same flags for both."""
    cmd.add_argument("--host", default="127.0.0.1", help=f"{what} address (default 127.0.0.1)")
    cmd.add_argument("--port", type=_port, default=port, help=f"{what} port (default {port})")
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
