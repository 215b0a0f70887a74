"""The grid of a run's page, and the list of its agents' test_patch calls: a cell per model and
task says how each of its predictions ended, in one word why, the kinds of its signals, how
many test_patch calls its agent made and what the last one said, and links to what it left
(result.json, patch.diff, grade.log, each case's log). A task with trials has a line per trial
in its cell. The calls' list names each call's time, level, headline and checks, as the report
told the agent."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ssebench.evaluate.batch import ERROR, GRADE_LOG, LOGS, PATCH, RESOLVED, RESULT, Graded
from ssebench.evaluate.pagehtml import e, href, row, table
from ssebench.evaluate.predictions import Prediction, model_folder


def _natural(name: str) -> list[Any]:
    """`pocs-10.log` after `pocs-9.log`."""
    return [int(p) if p.isdigit() else p for p in re.split(r"([0-9]+)", name)]


def _links(out: Path, folder: Path, with_result: bool) -> str:
    """Links to what a prediction left, as far as it is there."""
    parts = folder.parts
    where = out / folder
    names = [RESULT] if with_result else []
    names += [name for name in (PATCH, GRADE_LOG) if (where / name).is_file()]
    logs = sorted((p.name for p in (where / LOGS).glob("*.log")), key=_natural)
    links = [f'<a href="{href(*parts, n)}">{e(n)}</a>' for n in names]
    links += [f'<a href="{href(*parts, LOGS, n)}">{e(n[:-4])}</a>' for n in logs]
    return f'<span class="links">{" ".join(links)}</span>' if links else ""


def _said(graded: Graded) -> str:
    """How it ended, and why in one word: `unresolved: build-failed`, `error: timeout`."""
    if graded.empty:
        return "empty patch"
    said = graded.verdict
    if graded.why not in (RESOLVED, ERROR):
        said += f": {graded.why}"
    if graded.flagged:
        said += f", flagged: {', '.join(graded.flagged)}"
    return said


def _calls(item: Prediction) -> str:
    """How many test_patch calls the agent made and the last one's headline, linked to the
    list of them."""
    calls = item.agent.test_patch_calls
    if not calls:
        return "" if calls is None else '<span class="calls">no test_patch call</span>'
    count = f"{len(calls)} test_patch call{'s' if len(calls) > 1 else ''}"
    last = f"{count}, the last: {calls[-1].headline}"
    return f'<span class="calls"><a href="#calls-{item.number}">{e(last)}</a></span>'


def _state(graded: Graded) -> str:
    state = "empty" if graded.empty else graded.verdict
    return f"{state} flagged" if graded.flagged else state


def _one(graded: Graded, out: Path) -> str:
    """What a cell says of one prediction: its verdict, why, its calls, its links."""
    item = graded.item
    why = f' <span class="why">{e(graded.error)}</span>' if graded.verdict == ERROR else ""
    if not isinstance(item, Prediction):
        return f"{e(_said(graded))}{why}"
    try:
        model_folder(item.model)
    except ValueError:
        return f"{e(_said(graded))}{why}"
    links = "" if graded.empty else _links(out, item.folder, graded.verdict != ERROR)
    return f"{e(_said(graded))}{why} {_calls(item)} {links}"


def cell(found: Sequence[Graded], out: Path) -> str:
    """A model's cell for a task: its prediction, or a line per trial."""
    if not found:
        return '<td class="incomplete">no prediction</td>'
    if len(found) == 1 and not (isinstance(found[0].item, Prediction) and found[0].item.trial):
        return f'<td class="{_state(found[0])}">{_one(found[0], out)}</td>'
    lines = []
    for graded in found:
        trial = graded.item.trial if isinstance(graded.item, Prediction) else None
        name = f"trial {trial}: " if trial else f"line {graded.item.line}: "
        lines.append(f'<div class="{_state(graded)}">{e(name)}{_one(graded, out)}</div>')
    return f'<td class="trials">{"".join(lines)}</td>'


def grid(models: Sequence[str], graded: Sequence[Graded], tasks: Sequence[str], out: Path) -> str:
    """A row per task of `--tasks` (then per task only a prediction names), a column per model."""
    by_cell: dict[tuple[str, str], list[Graded]] = {}
    for one in graded:
        if one.item.model is not None and one.item.task is not None:
            by_cell.setdefault((one.item.model, one.item.task), []).append(one)
    for found in by_cell.values():
        found.sort(key=lambda g: (g.item.trial or 0) if isinstance(g.item, Prediction) else 1 << 30)
    rows = [
        row([f"<th>{e(task)}</th>"] + [cell(by_cell.get((m, task), []), out) for m in models])
        for task in dict.fromkeys([*tasks, *(task for _, task in by_cell)])
    ]
    return table("grid", ("task", *models), rows)


def calls_list(graded: Sequence[Graded]) -> str | None:
    """Every test_patch call of every prediction that recorded some; None when none did."""
    rows = []
    for one in graded:
        item = one.item
        if not isinstance(item, Prediction) or not item.agent.test_patch_calls:
            continue
        for number, call in enumerate(item.agent.test_patch_calls, start=1):
            checks = "; ".join(
                f"{c.name}: {c.status}" + (f" ({c.detail})" if c.detail else "")
                for c in call.checks
            )
            cells = [item.id, str(number), call.started, f"{call.seconds:.1f} s", str(call.level),
                     call.headline, checks]  # fmt: skip
            anchor = f' id="calls-{item.number}"' if number == 1 else ""
            rows.append(row((f"<td>{e(text)}</td>" for text in cells), anchor))
    if not rows:
        return None
    heads = ("prediction", "call", "started", "took", "level", "headline", "checks")
    return table("calls", heads, rows)
