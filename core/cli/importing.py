"""`ssebench import FORMAT SOURCE --out DIR`: another benchmark's tasks as ssebench task folders
(evaluate/importers). The format's reader comes from the importers' table; each record becomes a
task or one line that refuses it. Without --keep-going the first refusal stops the import with
nothing written (exit 2); with it, every good record is written, every bad one said, and the
import ends with 1. A progress bar on a terminal, and a summary line whatever stderr is.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ssebench.core.cli.parser import EXIT_FAILED, EXIT_OK
from ssebench.core.cli.root import Root
from ssebench.core.daemons.door import IMAGE, load_task
from ssebench.core.errors import ConfigError
from ssebench.evaluate.importers import FORMATS, Format
from ssebench.evaluate.importers.common import Records, Request, SourceError
from ssebench.evaluate.importers.writer import Refused, TaskWriter


@dataclass
class Tally:
    records: int = 0
    tasks: int = 0
    fixed: int = 0  # tasks with a fix.patch

    def line(self) -> str:
        refused = self.records - self.tasks
        said = f"{_count(self.records, 'record')}: {_count(self.tasks, 'task')}, "
        said += f"{self.fixed:,} with a fix"
        return said + (f", {refused:,} refused" if refused else "")


def cmd_import(args: argparse.Namespace, root: Root) -> int:
    entry = FORMATS[args.format]
    _own_flags(args, entry)
    if args.image is not None and not re.fullmatch(IMAGE, args.image):
        example = 'e.g. "debian:12"'
        raise ConfigError(f"--image: must be a Docker image name, {example} (got {args.image!r})")
    given: Path = args.path.absolute()  # what each task records it came from
    request = Request(given, source=args.source, image=args.image, mode=args.mode)
    records = entry.load()(request)
    # Loaded back as `grade --backend docker` loads them: the image's own paths are not here.
    load = functools.partial(load_task, checks=root.registry.checks, for_image=True)
    tally = Tally()
    with TaskWriter(args.out, load) as writer:
        with _progress(records.total, f"import {entry.name}") as (say, advance):
            _write(records, writer, tally, say, advance, keep_going=args.keep_going)
        written = writer.commit()
    for folder in written:
        print(folder)
    for note in records.notes:
        print(f"ssebench: import {entry.name}: {note}", file=sys.stderr)
    print(f"ssebench: import {entry.name}: {tally.line()}", file=sys.stderr)
    return EXIT_OK if tally.tasks == tally.records else EXIT_FAILED


def _write(
    records: Records,
    writer: TaskWriter,
    tally: Tally,
    say: Callable[[str], None],
    advance: Callable[[], None],
    *,
    keep_going: bool,
) -> None:
    """Each record written aside, or its one line (the first ends the import but with
    --keep-going); a task's warnings said once it is written."""
    for item in records.items:
        tally.records += 1
        try:
            if isinstance(item, SourceError):
                raise item
            writer.add(item)
        except (SourceError, Refused) as exc:
            if not keep_going:
                raise
            say(f"ssebench: error: {exc}")
        else:
            tally.tasks += 1
            tally.fixed += "fix.patch" in item.files
            for warning in item.warnings:
                say(f"ssebench: warning: {warning}")
        advance()


def _own_flags(args: argparse.Namespace, entry: Format) -> None:
    """A flag of another format's is refused, naming whose it is."""
    for other in FORMATS.values():
        for flag in other.flags:
            if flag not in entry.flags and getattr(args, flag.lstrip("-")) is not None:
                raise ConfigError(f"{flag} is for `ssebench import {other.name}`")


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


Say = Callable[[str], None]


@contextlib.contextmanager
def _progress(total: int | None, label: str) -> Iterator[tuple[Say, Callable[[], None]]]:
    """`say(line)` and `advance()`: a bar on a terminal (lines printed above it), else the
    lines alone."""
    if not sys.stderr.isatty():
        yield functools.partial(print, file=sys.stderr), lambda: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)

        def say(line: str) -> None:
            bar.console.print(line, markup=False, highlight=False)

        yield say, functools.partial(bar.advance, task)
