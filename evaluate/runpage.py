"""`OUT/index.html`: a benchmark run as one static page to look at, beside its summary.json.

Each model's resolved rate and counts, then a task × model grid whose cells say how each
prediction ended (resolved, unresolved, error, empty, flagged; or no prediction) and link to
what it left: result.json, patch.diff, grade.log and each case's log. No script, nothing fetched,
every link relative, so the folder can be opened as it is (`file://`) or served. Model names,
task ids and errors come from the user: every string is escaped, every path percent-encoded.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ssebench.evaluate.batch import ERROR, GRADE_LOG, LOGS, PATCH, RESULT, Graded
from ssebench.evaluate.predictions import model_folder

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
td.number { text-align: right; }
.resolved { background: #dcf5dc; } .unresolved { background: #fbe0dc; }
.error { background: #e6e0f5; } .empty { background: #f0f0f0; } .incomplete { color: #888; }
.flagged { outline: 3px solid #e0a000; outline-offset: -3px; }
.links a { margin-right: 0.5em; font-size: 12px; }
.why { display: block; font-size: 12px; color: #555; }
"""
COUNTS = ("resolved", "unresolved", "errors", "empty_patch", "incomplete", "total")
HEADS = ("resolved", "unresolved", "errors", "empty patch", "no prediction", "predictions")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _href(*parts: str) -> str:
    return _e("/".join(quote(part, safe="") for part in parts))


def _natural(name: str) -> list[Any]:
    """`pocs-10.log` after `pocs-9.log`."""
    return [int(p) if p.isdigit() else p for p in re.split(r"([0-9]+)", name)]


def _links(out: Path, folder: str, task: str, with_result: bool) -> str:
    """Links to what a prediction left, as far as it is there."""
    where = out / folder / task
    names = [RESULT] if with_result else []
    names += [name for name in (PATCH, GRADE_LOG) if (where / name).is_file()]
    logs = sorted((p.name for p in (where / LOGS).glob("*.log")), key=_natural)
    links = [f'<a href="{_href(folder, task, n)}">{_e(n)}</a>' for n in names]
    links += [f'<a href="{_href(folder, task, LOGS, n)}">{_e(n[:-4])}</a>' for n in logs]
    return f'<span class="links">{" ".join(links)}</span>' if links else ""


def _cell(graded: Graded | None, out: Path, model: str, task: str) -> str:
    if graded is None:
        return '<td class="incomplete">no prediction</td>'
    state = "empty" if graded.empty else graded.verdict
    classes = f"{state} flagged" if graded.flagged else state
    said = f"{state}, flagged" if graded.flagged else state
    if graded.empty:
        said = "empty patch"
    why = f' <span class="why">{_e(graded.error)}</span>' if graded.verdict == ERROR else ""
    try:
        folder = model_folder(model)
    except ValueError:
        return f'<td class="{classes}">{_e(said)}{why}</td>'
    links = "" if graded.empty else _links(out, folder, task, graded.verdict != ERROR)
    return f'<td class="{classes}">{_e(said)}{why} {links}</td>'


def _row(cells: Iterable[str]) -> str:
    return f"<tr>{''.join(cells)}</tr>"


def _table(name: str, heads: Iterable[str], rows: Iterable[str]) -> str:
    head = _row(f"<th>{_e(h)}</th>" for h in heads)
    return "\n".join([f'<table class="{name}">', head, *rows, "</table>"])


def _models(summary: dict[str, Any], graded: Sequence[Graded]) -> str:
    rows = [
        _row(
            [f"<th>{_e(model)}</th>", f'<td class="number">{counts["resolved_rate"]:.1%}</td>']
            + [f'<td class="number">{counts[key]}</td>' for key in COUNTS]
            + [f'<td class="number">{_flagged(graded, model)}</td>']
        )
        for model, counts in summary["models"].items()
    ]
    return _table("models", ("model", "resolved rate", *HEADS, "flagged"), rows)


def _grid(models: Sequence[str], graded: Sequence[Graded], tasks: Sequence[str], out: Path) -> str:
    """A row per task of `--tasks` (then per task only a prediction names), a column per model."""
    by_cell: dict[tuple[str, str], Graded] = {}
    for one in graded:
        if one.item.model is not None and one.item.task is not None:
            by_cell.setdefault((one.item.model, one.item.task), one)  # a second line is an error
    rows = [
        _row(
            [f"<th>{_e(task)}</th>"] + [_cell(by_cell.get((m, task)), out, m, task) for m in models]
        )
        for task in dict.fromkeys([*tasks, *(task for _, task in by_cell)])
    ]
    return _table("grid", ("task", *models), rows)


def render_page(
    summary: dict[str, Any], graded: Sequence[Graded], tasks: Sequence[str], out: Path, title: str
) -> str:
    """The page of a run (or a shard) whose summary is `summary`, over the tasks of `--tasks`."""
    tally = (
        f"{summary['total']} predictions: {summary['resolved']} resolved, "
        f"{summary['unresolved']} unresolved, {summary['errors']} errors; "
        f"{len(tasks)} tasks in --tasks"
    )
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">',
        f"<title>{_e(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>",
        f"<h1>{_e(title)}</h1>\n<p>{_e(tally)}</p>",
        "<h2>Models</h2>",
        _models(summary, graded),
        "<h2>Tasks × models</h2>",
        _grid(list(summary["models"]), graded, tasks, out),
    ]
    if summary["error_list"]:
        rows = [
            _row(f"<td>{_e('' if value is None else value)}</td>" for value in error.values())
            for error in summary["error_list"]
        ]
        parts += ["<h2>Errors</h2>", _table("errors", ("line", "model", "task", "error"), rows)]
    parts.append("</body>\n</html>\n")
    return "\n".join(parts)


def _flagged(graded: Sequence[Graded], model: str) -> int:
    return sum(bool(g.flagged) for g in graded if g.item.model == model)
