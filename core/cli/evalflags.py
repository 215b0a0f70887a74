"""The evaluator's flags: `grade` (a patch, a benchmark run), `validate` (a task, a dataset),
`import`; and those every command that runs cases shares (the task, how cases are confined)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ssebench.core.cli.flagrules import TableHelp, TableNames, checked
from ssebench.core.settings import positive_seconds

ISOLATIONS = TableNames("ssebench.core.daemons.door", "choices")
ISOLATION_HELP = TableHelp("ssebench.core.daemons.door", "isolation_help")
BACKENDS = TableNames("ssebench.evaluate.backends", "BACKENDS")
FORMATS = TableNames("ssebench.evaluate.importers", "FORMATS")
SECB_MODES = TableNames("ssebench.evaluate.importers", "SECB_MODES")
BACKEND_HELP = (
    "where each patch is graded, one of %(choices)s: local (default), on this machine; docker, "
    "in a fresh container of the task's image (task.toml's image)"
)
_seconds = checked(positive_seconds)


def validate_flags(validate: argparse.ArgumentParser) -> None:
    which = validate.add_mutually_exclusive_group(required=True)
    task_flag(which)
    which.add_argument(
        "--tasks", type=Path, metavar="DIR", help="a dataset: every task folder in DIR"
    )
    validate.add_argument("--fix", type=Path, help="with --task: the reference fix (a diff)")
    validate.add_argument(
        "--fix-name",
        metavar="NAME",
        help="with --tasks: each task's fix, a file in its folder (default fix.patch)",
    )
    validate.add_argument(
        "--out", type=Path, metavar="DIR", help="with --tasks: where each task's verdict goes"
    )
    validate.add_argument(
        "-j", "--jobs", type=count, metavar="N", help="with --tasks: tasks at once (default 1)"
    )
    validate.add_argument(
        "--backend", choices=BACKENDS, default="local", metavar="BACKEND", help=BACKEND_HELP
    )
    validate.add_argument("--runs", type=count, default=1, help="runs on each tree (default 1)")
    validate.add_argument("--json", action="store_true", help='{"sound": ...} for scripts')
    validate.add_argument(
        "--logs",
        type=Path,
        metavar="DIR",
        help="save every case's log here, as DIR/run-N/as-shipped|with-the-fix/KEY-INDEX.log",
    )
    validate.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    isolation_flags(validate)


def import_flags(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "format",
        choices=FORMATS,
        metavar="FORMAT",
        help=TableHelp("ssebench.evaluate.importers", "FORMATS", _format_help),
    )
    cmd.add_argument(
        "path",
        type=Path,
        metavar="SOURCE",
        help=TableHelp("ssebench.evaluate.importers", "FORMATS", _source_help),
    )
    cmd.add_argument("--out", type=Path, required=True, metavar="DIR", help="the dataset folder")
    cmd.add_argument(
        "--keep-going",
        action="store_true",
        help="write every good record, say every bad one (each one line) and exit 1 at the end "
        "(default: the first bad record stops the import, nothing written)",
    )
    cmd.add_argument(
        "--source",
        type=Path,
        metavar="PATH",
        help="upstream: the tree on this machine (default: config's source, in the image)",
    )
    cmd.add_argument(
        "--image",
        metavar="NAME",
        help="upstream: the case image (default: upstream's name for it)",
    )
    cmd.add_argument(
        "--mode",
        choices=SECB_MODES,
        metavar="MODE",
        help="secb: how a PoC is judged, as SEC-bench's evaluator's --mode: %(choices)s "
        "(default medium, as SEC-bench's)",
    )


def _format_help(table: Mapping[str, Any]) -> str:
    return "the source's benchmark: " + "; ".join(
        f"{e.name}, {e.benchmark}" for e in table.values()
    )


def _source_help(table: Mapping[str, Any]) -> str:
    return "what FORMAT reads: " + "; ".join(f"{e.name}: {e.source}" for e in table.values())


def count(raw: str) -> int:
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {raw!r}")
    return int(raw)


def grading_flags(grade: argparse.ArgumentParser, where: argparse._MutuallyExclusiveGroup) -> None:
    """A patch on a pristine copy (--task with --patch), or a benchmark run (--tasks)."""
    grade.add_argument(
        "--backend", choices=BACKENDS, default="local", metavar="BACKEND", help=BACKEND_HELP
    )
    grade.add_argument("--patch", type=Path, help="with --task: grade this diff on a scratch copy")
    grade.add_argument(
        "--every-case",
        action="store_true",
        help="with --patch or --fresh-container: run every case (PoCs do not stop at the first "
        "that still triggers, as validate runs them)",
    )
    grade.add_argument(
        "--fresh-container",
        action="store_true",
        help="with --task alone, in a fresh container of the task's image that this grade owns "
        "(--backend docker starts one): grade the tree where it is, and take the task's "
        "writable folders as the image has them",
    )
    grade.add_argument(
        "--logs", type=Path, metavar="DIR", help="with --patch: save every case's log here"
    )
    _run_flags(grade, where)


def _run_flags(grade: argparse.ArgumentParser, where: argparse._MutuallyExclusiveGroup) -> None:
    """A benchmark run's: its tasks, predictions and output, how it is spread, its record."""
    where.add_argument(
        "--tasks", type=Path, metavar="DIR", help="a benchmark run: one folder per task id"
    )
    grade.add_argument("--predictions", type=Path, metavar="FILE", help="with --tasks: JSON lines")
    grade.add_argument("--out", type=Path, metavar="DIR", help="with --tasks: where results go")
    grade.add_argument(
        "-j",
        "--jobs",
        type=count,
        metavar="N",
        help="with --tasks: grades at once on this machine (default 1)",
    )
    grade.add_argument(
        "--shard", metavar="I/N", help="with --tasks: every N-th prediction from the I-th (from 0)"
    )
    grade.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="with --tasks: the longest one prediction's grade may take; over it, the grade is "
        "stopped, its cases killed, and the prediction is an error (default: no limit)",
    )
    grade.add_argument(
        "--run-id",
        metavar="NAME",
        help="with --tasks: the run's id, in its summary and report names; an --out holds one "
        "run (default: the predictions file's stem)",
    )
    grade.add_argument(
        "--rejudge",
        action="store_true",
        help="with --tasks: judge every verdict of --out again from its saved logs by today's "
        "rules, building and running nothing; say which changed",
    )


def task_flag(
    cmd: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup, *, required: bool = False
) -> None:
    cmd.add_argument("--task", type=Path, required=required, help="task folder or its task.toml")


def isolation_flags(cmd: argparse.ArgumentParser) -> None:
    """How the agent's code is confined (confined unless --no-isolation says otherwise), as
    whom, and on how big a copy of its tree."""
    which = cmd.add_mutually_exclusive_group()
    which.add_argument(
        "--isolation",
        choices=ISOLATIONS,
        default="auto",
        help=ISOLATION_HELP,
    )
    which.add_argument(
        "--no-isolation",
        dest="isolation",
        action="store_const",
        const="none",
        help="run the agent's build, tests and PoCs unconfined (a warning at every start)",
    )
    cmd.add_argument(
        "--case-user", metavar="USER", help="who cases run as (root only; a name or uid)"
    )
    cmd.add_argument(
        "--tree-mb",
        type=count,
        metavar="MB",
        help="the most the agent's tree may hold (its files' sizes) for cases to run on a copy "
        "of it; past it each case fails in one line (default: the task's limits.tree_mb, 8192)",
    )
