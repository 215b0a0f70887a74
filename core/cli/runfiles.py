"""A benchmark run's files, for grading it (core/cli/batchrun.py) and for rejudging it
(core/cli/rejudging.py): its predictions read and its run claimed in `--out` before anything
else, and at its end summary.json, index.html and each model's SWE-bench report written."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from typing import TYPE_CHECKING

from ssebench.core.cli.parser import EXIT_FAILED, EXIT_OK
from ssebench.core.cli.requests import Basis
from ssebench.core.errors import ConfigError

if TYPE_CHECKING:
    from ssebench.evaluate.batch import Graded
    from ssebench.evaluate.predictions import BadLine, Prediction
    from ssebench.evaluate.runrecord import RunRecord
    from ssebench.evaluate.runshapes import RunSettings

TASK_FILE = "task.toml"


def _check_run_flags(args: argparse.Namespace) -> None:
    if args.patch is not None or args.logs is not None:
        raise ConfigError("--patch and --logs grade one task: use them with --task DIR")
    if args.predictions is None or args.out is None:
        raise ConfigError("--tasks needs --predictions FILE and --out DIR")
    if not args.tasks.is_dir():
        raise ConfigError(f"{args.tasks}: no such folder of tasks")
    if (args.tasks / TASK_FILE).is_file():
        raise ConfigError(f"{args.tasks} is a task folder: give its parent, a folder of tasks")
    if shutil.which("git") is None and not args.rejudge:
        raise ConfigError("grading patches needs git (`git apply`); install git")


def read_run(
    args: argparse.Namespace,
) -> tuple[list[Prediction | BadLine], tuple[int, int] | None, RunRecord]:
    """The run's predictions (its shard's), and the run OUT holds: this one (refused when OUT
    holds another), which `keep_run` records once nothing else refuses the run."""
    from ssebench.evaluate.predictions import in_shard, parse_shard, read_predictions
    from ssebench.evaluate.runrecord import claim, run_id_of

    _check_run_flags(args)
    shard = parse_shard(args.shard) if args.shard is not None else None
    run_id = run_id_of(args.run_id, args.predictions)
    every = read_predictions(args.predictions)
    if not every:
        print(f"ssebench: warning: {args.predictions} holds no predictions", file=sys.stderr)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{args.out}: cannot make the output folder: {exc.strerror}") from None
    return [item for item in every if in_shard(item, shard)], shard, claim(args.out, run_id)


def keep_run(args: argparse.Namespace, record: RunRecord) -> None:
    from ssebench.evaluate.runrecord import keep

    keep(args.out, record)


def run_settings(args: argparse.Namespace, basis: Basis) -> RunSettings:
    """What decides this run's verdicts besides each patch, as summary.json records it."""
    from ssebench.evaluate.digests import ssebench_version
    from ssebench.evaluate.runshapes import RunSettings

    isolation = basis.mechanism.name if basis.mechanism is not None else basis.isolation
    if args.backend == "docker":
        isolation = f"{basis.isolation} (chosen in each task's image)"
    return RunSettings(ssebench=ssebench_version(), backend=args.backend, isolation=isolation,
                       timeout=args.timeout, jobs=args.jobs or 1)  # fmt: skip


def finish_run(
    graded: list[Graded],
    args: argparse.Namespace,
    shard: tuple[int, int] | None,
    record: RunRecord,
    settings: RunSettings,
    said: str,
) -> int:
    """summary.json, also on stdout, index.html, each model's SWE-bench report (the whole
    run's), and the tally on stderr ending in `said`: what the run comes to."""
    from ssebench.evaluate.batch import summary_name
    from ssebench.evaluate.runpage import render_page
    from ssebench.evaluate.runrecord import RunFields, now
    from ssebench.evaluate.runreport import summarize, task_ids
    from ssebench.evaluate.swebench import swebench_reports
    from ssebench.evaluate.verdicts import dump, write_json, write_whole

    tasks = task_ids(args.tasks)
    run = RunFields(record.run_id, record.started, now(), settings)
    summary = summarize(graded, tasks, run, whole=shard is None)
    path, page = args.out / summary_name(shard), args.out / summary_name(shard, "index.html")
    title = f"ssebench: {args.predictions.name}"
    title += "" if shard is None else f", shard {shard[0]} of {shard[1]}"
    reports = {} if shard is not None else swebench_reports(graded, tasks, record.run_id)
    try:
        write_json(path, summary)
        for name, report in reports.items():
            write_json(args.out / name, dump(report))
        write_whole(page, render_page(summary, graded, tasks, args.out, title))
    except OSError as exc:
        raise ConfigError(
            f"{exc.filename}: cannot write the run's report: {exc.strerror or exc}"
        ) from None
    print(json.dumps(summary, indent=2))
    print(
        f"ssebench: {summary['total']} predictions: {summary['resolved']} resolved, "
        f"{summary['unresolved']} unresolved, {summary['errors']} errors; {said} ({path})",
        file=sys.stderr,
    )
    return EXIT_OK if not summary["errors"] else EXIT_FAILED
