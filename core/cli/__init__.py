"""The `ssebench` command line: one-line errors, exit statuses that scripts can rely on."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ssebench.core.cli.startup import loading, skip_httpx_cli
from ssebench.core.errors import ConfigError, NoVerdict

if TYPE_CHECKING:
    from ssebench.core.cli.root import Root


class _LevelPrefix(logging.Formatter):
    """`ssebench: warning: ...`, `ssebench: error: ...`, like the CLI's own one-line messages."""

    def format(self, record: logging.LogRecord) -> str:
        prefix = "" if record.levelno < logging.WARNING else f"{record.levelname.lower()}: "
        return f"ssebench: {prefix}{super().format(record)}"


def log_to_stderr() -> None:
    """Causes of internal failures go to our stderr, never to the agent; library chatter
    stays out."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LevelPrefix())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])


def _command(name: str) -> Callable[[argparse.Namespace, Root], int]:
    """The function of command `name`, with only its own module imported: `serve` starts
    without grading's verdicts or the importers (bench/startup.py)."""
    match name:
        case "check" | "plugins":
            from ssebench.core.cli import evaluate

            return evaluate.cmd_check if name == "check" else evaluate.cmd_plugins
        case "grade":
            from ssebench.core.cli.grading import cmd_grade

            return cmd_grade
        case "validate":
            from ssebench.core.cli.validating import cmd_validate

            return cmd_validate
        case "new":
            from ssebench.core.cli.newtask import cmd_new

            return cmd_new
        case "import":
            from ssebench.core.cli.importing import cmd_import

            return cmd_import
    from ssebench.core.cli import serve

    return {
        "daemon": serve.cmd_daemon, "serve": serve.cmd_serve, "run": serve.cmd_run,
        "mcp-config": serve.cmd_mcp_config,
    }[name]  # fmt: skip


def finish(command: Callable[[], int]) -> int:
    """Run a command to its exit status: a bad setting, flag or task is one line and 2; a
    command that gave no verdict ends with its status, its cause said already."""
    from ssebench.core.cli.parser import EXIT_OK, EXIT_USAGE

    try:
        return command()
    except ConfigError as exc:
        print(f"ssebench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except NoVerdict as exc:
        return exc.status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader (say, `head`) went away; what it did not read is not an error of ours.
        sys.stderr.close()
        return EXIT_OK


def main(argv: Sequence[str] | None = None) -> None:
    skip_httpx_cli()
    with loading():  # the command line's modules and the command's own
        from ssebench.core.cli.parser import EXIT_OK, build_parser

        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:  # asking what there is, as --help does
            parser.print_help()
            sys.exit(EXIT_OK)
        run = _command(args.command)
    log_to_stderr()

    def command() -> int:
        from ssebench.core.cli.root import compose

        return run(args, compose(args))

    sys.exit(finish(command))
