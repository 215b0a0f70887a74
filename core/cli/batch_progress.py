"""A benchmark run's progress on stderr: a bar on a terminal, one plain line per prediction else.

Errors are one line each either way (printed above the bar on a terminal), so none is lost
in a log, and the bar's tally says how the run is going without scrolling.
"""

from __future__ import annotations

import contextlib
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from ssebench.evaluate.batch import ERROR, RESOLVED, Graded
from ssebench.evaluate.predictions import Prediction

_PLURAL = {ERROR: "errors"}


def describe(graded: Graded, predictions: Path) -> str:
    """One line: `MODEL/TASK: resolved`, or `unresolved (REASON)` (then `; flagged: KINDS` when
    it has signals), or where the error is and what it is."""
    item = graded.item
    if graded.empty and isinstance(item, Prediction):
        return f"{item.id}: {graded.verdict} (empty patch: not graded)"
    if graded.verdict != ERROR and isinstance(item, Prediction):
        when = " (graded before)" if graded.reused else f" in {graded.seconds:.1f} s"
        if graded.rejudged is not None:
            when = f" (rejudged: {graded.rejudged})"
        why = "" if graded.verdict == RESOLVED else f" ({graded.why})"
        again = f" (graded again: {graded.again})" if graded.again else ""
        flagged = f"; flagged: {', '.join(graded.flagged)}" if graded.flagged else ""
        return f"{item.id}: {graded.verdict}{why}{when}{again}{flagged}"
    which = f"{item.id}: " if isinstance(item, Prediction) else ""
    return f"error: {predictions}:{item.line}: {which}{graded.error}"


@contextlib.contextmanager
def batch_report(total: int, predictions: Path) -> Iterator[Callable[[Graded], None]]:
    """`report(graded)` for each prediction as it is graded."""
    if not sys.stderr.isatty():
        count = 0

        def line(graded: Graded) -> None:
            nonlocal count
            count += 1
            print(f"ssebench: [{count}/{total}] {describe(graded, predictions)}", file=sys.stderr)

        yield line
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    tally: Counter[str] = Counter()
    columns = (
        TextColumn("grading"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[tally]}"),
    )
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task("grading", total=total, tally="")

        def advance(graded: Graded) -> None:
            tally[graded.verdict] += 1
            if graded.verdict == ERROR or graded.flagged:  # each worth a line of its own
                bar.console.print(f"ssebench: {describe(graded, predictions)}", markup=False)
            text = ", ".join(f"{n} {_PLURAL.get(v, v)}" for v, n in sorted(tally.items()))
            bar.update(task, advance=1, tally=text)

        yield advance
