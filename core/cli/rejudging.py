"""`grade --tasks ... --rejudge`: a run's verdicts judged again from their saved logs by today's
rules (evaluate/rejudge.py), nothing built or run; each line says what changed, and the run's
summary, page and reports are written again from the verdicts as they now stand."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from ssebench.core.cli.batch_progress import batch_report
from ssebench.core.cli.root import Root
from ssebench.core.cli.runfiles import finish_run, keep_run, read_run
from ssebench.core.daemons.door import Task, load_task
from ssebench.core.errors import ConfigError
from ssebench.evaluate.batch import ERROR, Graded, judged, summary_name, ungraded
from ssebench.evaluate.digests import ssebench_version
from ssebench.evaluate.predictions import BadLine, Prediction
from ssebench.evaluate.rejudge import rejudge
from ssebench.evaluate.runshapes import RunSettings


def _word(result: dict[str, object]) -> str:
    """A verdict as a progress line words it: `resolved`, `unresolved (build-failed)`."""
    if result["resolved"]:
        return "resolved"
    return f"unresolved ({result.get('reason') or 'no reason recorded'})"


class _Rejudge:
    """Each prediction's verdict judged again, each task read once."""

    def __init__(self, args: argparse.Namespace, root: Root) -> None:
        self.args = args
        self.checks = root.registry.checks
        self.tasks: dict[str, Task | str] = {}

    def task(self, name: str) -> Task | str:
        if name not in self.tasks:
            try:
                docker = self.args.backend == "docker"
                self.tasks[name] = load_task(self.args.tasks / name, self.checks, for_image=docker)
            except ConfigError as exc:
                self.tasks[name] = str(exc)
        return self.tasks[name]

    async def __call__(self, item: Prediction | BadLine) -> Graded:
        said = ungraded(item, self.args.tasks)
        if said is not None:
            return said
        assert isinstance(item, Prediction)  # a bad line is said by `ungraded`
        task = self.task(item.task)
        if isinstance(task, str):
            return Graded(item, ERROR, task)
        try:
            done = await rejudge(item, self.args.out / item.folder, task, self.checks)
        except ValueError as exc:
            return Graded(item, ERROR, str(exc))
        was = f"was {_word(done.before)}" if done.changed else "unchanged"
        return judged(item, done.after, reused=True, rejudged=was)


def rejudge_run(args: argparse.Namespace, root: Root) -> int:
    items, shard, record = read_run(args)
    keep_run(args, record)
    rejudged = _Rejudge(args, root)

    async def every() -> list[Graded]:
        found = []
        with batch_report(len(items), args.predictions) as report:
            for item in items:
                found.append(await rejudged(item))
                report(found[-1])
        return found

    graded = asyncio.run(every())
    changed = sum(one.rejudged not in (None, "unchanged") for one in graded)
    kept = sum(one.rejudged is not None for one in graded)
    said = f"{kept} rejudged from their saved logs, {changed} changed"
    return finish_run(graded, args, shard, record, _settings(args, shard), said)


def _settings(args: argparse.Namespace, shard: tuple[int, int] | None) -> RunSettings:
    """The settings the verdicts were graded with, as the run's summary recorded them (a
    rejudge grades nothing); else the flags, isolation as asked."""
    try:
        earlier = json.loads(Path(args.out / summary_name(shard)).read_text(encoding="utf-8"))
        return RunSettings.model_validate(earlier["settings"])
    except (OSError, ValueError, KeyError, TypeError):
        return RunSettings(ssebench=ssebench_version(), backend=args.backend,
                           isolation=args.isolation, timeout=args.timeout,
                           jobs=args.jobs or 1)  # fmt: skip
