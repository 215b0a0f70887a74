"""`OUT/index.html`: a benchmark run as one static page to look at, beside its summary.json.

The run (its id, times and settings) and its tally; pictures of each model's resolved rate, of
its unresolved predictions by reason and, with trials, of pass@k (evaluate/charts.py); each
model's counts, reasons, pass@k, test_patch calls and spend; a task × model grid whose cells
say how each prediction ended and why, and link to what it left (evaluate/pagecells.py); the
agents' test_patch calls; the errors. No script, nothing fetched, every link relative, so the
folder can be opened as it is (`file://`) or served. Every string from the user is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ssebench.evaluate.batch import Graded
from ssebench.evaluate.charts import legend, pass_chart, reasons_chart, resolved_chart
from ssebench.evaluate.pagecells import calls_list, grid
from ssebench.evaluate.pagehtml import e, percent, row, table

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
td.number { text-align: right; }
.resolved { background: #dcf5dc; } .unresolved { background: #fbe0dc; }
.error { background: #e6e0f5; } .empty { background: #f0f0f0; } .incomplete { color: #888; }
.flagged { outline: 3px solid #e0a000; outline-offset: -3px; }
td.trials div { padding: 0.1em 0.3em; margin: 0.1em 0; }
.links a { margin-right: 0.5em; font-size: 12px; }
.why, .calls { display: block; font-size: 12px; color: #555; }
svg.chart { display: block; font-size: 12px; margin: 0.3em 0 1em; }
.legend .key { margin-right: 1em; font-size: 12px; white-space: nowrap; }
.legend .swatch { display: inline-block; width: 10px; height: 10px; margin-right: 0.3em; }
"""
COUNTS = ("resolved", "unresolved", "errors", "empty_patch", "incomplete", "total")
HEADS = ("resolved", "unresolved", "errors", "empty patch", "no prediction", "predictions")
MORE = ("flagged", "why", "pass@k", "test_patch calls", "cost", "tokens", "agent time")


def _usd(amount: float) -> str:
    return f"${amount:,.2f}" if amount >= 0.01 or not amount else f"${amount:.4f}"


def _pass(counts: dict[str, Any]) -> str:
    """pass@k by k, pass@1 with its spread across trials; nothing without trials."""
    if counts["trials"] < 2:
        return ""
    said = []
    for k, rate in counts["pass_at"].items():
        spread = counts["pass_at_1_sd"] if k == "1" else None
        said.append(f"pass@{k} {percent(rate)}" + (f" ± {percent(spread)}" if spread else ""))
    return "; ".join(said)


def _spend(counts: dict[str, Any]) -> list[str]:
    """Its test_patch calls, cost, tokens and agent time, as far as its lines give them."""
    calls, cost, tokens = counts["test_patch_calls"], counts["cost"], counts["input_tokens"]
    out, time = counts["output_tokens"], counts["duration_s"]
    said = ["", "", "", ""]
    if calls["predictions"]:
        made = "prediction" if calls["predictions"] == 1 else "predictions"
        said[0] = f"{calls['total']:g} in {calls['predictions']} {made}, {calls['mean']:g} each"
    if cost["predictions"]:
        said[1] = f"{_usd(cost['total'])}, {_usd(cost['mean'])} each"
        if cost["per_resolved"] is not None:
            said[1] += f", {_usd(cost['per_resolved'])} per resolved"
    if tokens["predictions"] or out["predictions"]:
        said[2] = f"{tokens['total'] or 0:,.0f} in, {out['total'] or 0:,.0f} out"
    if time["predictions"]:
        said[3] = f"{time['mean']:,.0f} s each"
    return said


def _models(summary: dict[str, Any], graded: Sequence[Graded]) -> str:
    rows = []
    for model, counts in summary["models"].items():
        why = ", ".join(f"{reason} {n}" for reason, n in counts["reasons"].items() if n)
        flagged = sum(bool(g.flagged) for g in graded if g.item.model == model)
        rows.append(row(
            [f"<th>{e(model)}</th>", f'<td class="number">{percent(counts["resolved_rate"])}</td>']
            + [f'<td class="number">{counts[key]}</td>' for key in COUNTS]
            + [f'<td class="number">{flagged}</td>']
            + [f"<td>{e(text)}</td>" for text in (why, _pass(counts), *_spend(counts))]
        ))  # fmt: skip
    return table("models", ("model", "resolved rate", *HEADS, *MORE), rows)


def _run(summary: dict[str, Any]) -> str:
    settings = summary["settings"]
    timeout = "none" if settings["timeout"] is None else f"{settings['timeout']:g} s"
    return (
        f"run {summary['run_id']}: started {summary['started']}, ended {summary['ended']}; "
        f"ssebench {settings['ssebench']}, backend {settings['backend']}, isolation "
        f"{settings['isolation']}, --timeout {timeout}, -j {settings['jobs']}"
    )


def render_page(
    summary: dict[str, Any], graded: Sequence[Graded], tasks: Sequence[str], out: Path, title: str
) -> str:
    """The page of a run (or a shard) whose summary is `summary`, over the tasks of `--tasks`."""
    tally = (
        f"{summary['total']} predictions: {summary['resolved']} resolved, "
        f"{summary['unresolved']} unresolved, {summary['errors']} errors; "
        f"{len(tasks)} tasks in --tasks"
    )
    models = summary["models"]
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">',
        f"<title>{e(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>",
        f"<h1>{e(title)}</h1>\n<p>{e(_run(summary))}</p>\n<p>{e(tally)}</p>",
        "<h2>Resolved rate</h2>",
        resolved_chart(models, len(tasks)),
        "<h2>Not resolved, by reason</h2>",
        reasons_chart(models),
        legend(),
    ]
    passes = pass_chart(models)
    if passes is not None:
        parts += ["<h2>pass@k over trials</h2>", passes]
    parts += ["<h2>Models</h2>", _models(summary, graded), "<h2>Tasks × models</h2>",
              grid(list(models), graded, tasks, out)]  # fmt: skip
    calls = calls_list(graded)
    if calls is not None:
        parts += ["<h2>test_patch calls</h2>", calls]
    if summary["error_list"]:
        rows = [
            row(f"<td>{e('' if value is None else value)}</td>" for value in error.values())
            for error in summary["error_list"]
        ]
        parts += ["<h2>Errors</h2>", table("errors", ("line", "model", "task", "error"), rows)]
    parts.append("</body>\n</html>\n")
    return "\n".join(parts)
