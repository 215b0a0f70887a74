"""The `ssebench` command line: one-line errors, exit statuses that scripts can rely on."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from ssebench.core.cli.parser import EXIT_OK, EXIT_USAGE, build_parser
from ssebench.core.cli.startup import skip_httpx_cli
from ssebench.core.errors import ConfigError
from ssebench.core.settings import Settings, load_settings


class _LevelPrefix(logging.Formatter):
    """`ssebench: warning: ...`, `ssebench: error: ...`, like the CLI's own one-line messages."""

    def format(self, record: logging.LogRecord) -> str:
        prefix = "" if record.levelno < logging.WARNING else f"{record.levelname.lower()}: "
        return f"ssebench: {prefix}{super().format(record)}"


def _commands() -> dict[str, Callable[[argparse.Namespace], int]]:
    from ssebench.core.cli import evaluate, grading, importing, newtask, serve, validating

    return {
        "check": evaluate.cmd_check,
        "grade": grading.cmd_grade,
        "validate": validating.cmd_validate,
        "plugins": evaluate.cmd_plugins,
        "daemon": serve.cmd_daemon,
        "serve": serve.cmd_serve,
        "run": serve.cmd_run,
        "mcp-config": serve.cmd_mcp_config,
        "new": newtask.cmd_new,
        "import": importing.cmd_import,
    }


def _check_settings(args: argparse.Namespace) -> Settings:
    """Every command refuses a bad setting the same way, at start, whether it reads it or not:
    the environment as it is (a flag that overrides a bad variable leaves the mistake where
    the next command meets it), then with the flags: the settings the command runs with,
    read here once (core/cli/root.py hands them on)."""
    load_settings()
    return load_settings(
        SSE_DIFFICULTY=getattr(args, "difficulty", None),
        SSE_DAEMON_URL=getattr(args, "daemon_url", None),
        SSE_PROGRESS_INTERVAL=getattr(args, "progress_interval", None),
    )


def main(argv: Sequence[str] | None = None) -> None:
    skip_httpx_cli()
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # asking what there is, as --help does
        parser.print_help()
        sys.exit(EXIT_OK)
    # Causes of internal failures go to our stderr, never to the agent; library chatter stays out.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LevelPrefix())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    try:
        args.settings = _check_settings(args)
        code = _commands()[args.command](args)
    except ConfigError as exc:
        print(f"ssebench: error: {exc}", file=sys.stderr)
        code = EXIT_USAGE
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        # The reader (say, `head`) went away; what it did not read is not an error of ours.
        sys.stderr.close()
        code = EXIT_OK
    sys.exit(code)
