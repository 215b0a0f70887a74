"""A run's pictures, as inline SVG in its page (no script, nothing fetched): each model's resolved
rate as a bar with its count, its predictions that did not resolve stacked by reason, and, for
a model with trials, pass@k for each k.

Bars are drawn from the summary's numbers alone, their widths a fixed scale of pixels so a
reader (and a test) can measure them: a rate of 1 is BAR_WIDTH wide; a stack's unit is the
widest stack's count over BAR_WIDTH. Each bar's `<title>` says its number (a tooltip), and the
text beside it says it again; names are escaped like the rest of the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ssebench.evaluate.pagehtml import e, percent
from ssebench.evaluate.reasons import (
    EMPTY_PATCH,
    ERROR,
    FAILED,
    PATCH_DOES_NOT_APPLY,
    REASONS,
    RESOLVED,
    TIMEOUT,
)

LABEL_WIDTH, BAR_X, BAR_WIDTH, ROW, BAR = 220, 230, 400, 24, 16
WIDTH = BAR_X + BAR_WIDTH + 120
COLORS = {
    RESOLVED: "#2e7d32",
    EMPTY_PATCH: "#9e9e9e",
    PATCH_DOES_NOT_APPLY: "#6d4c41",
    FAILED["build"]: "#c62828",
    FAILED["pocs"]: "#ad1457",
    FAILED["intent"]: "#ef6c00",
    FAILED["functional"]: "#f9a825",
    TIMEOUT: "#1565c0",
    ERROR: "#6a1b9a",
}
OTHER_COLOR = "#455a64"  # a third-party check's failure
PASS_COLOR = "#00838f"


def color(reason: str) -> str:
    return COLORS.get(reason, OTHER_COLOR)


def _svg(name: str, rows: int, body: Sequence[str], title: str) -> str:
    height = rows * ROW + 8
    return "\n".join([
        f'<svg class="chart chart-{name}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{e(title)}">',
        *body,
        "</svg>",
    ])  # fmt: skip


def _label(index: int, text: str) -> str:
    y = index * ROW + 4 + BAR - 3
    return f'<text x="{LABEL_WIDTH}" y="{y}" text-anchor="end">{e(text)}</text>'


def _bar(index: int, x: int, width: int, fill: str, title: str, kind: str) -> str:
    y = index * ROW + 4
    return (
        f'<rect class="bar bar-{e(kind)}" x="{x}" y="{y}" width="{width}" height="{BAR}" '
        f'fill="{fill}" shape-rendering="crispEdges"><title>{e(title)}</title></rect>'
    )


def _after(index: int, x: int, text: str) -> str:
    return f'<text x="{x + 6}" y="{index * ROW + 4 + BAR - 3}">{e(text)}</text>'


def resolved_chart(models: dict[str, Any], tasks: int) -> str:
    """Each model's resolved rate: a bar, its count beside it."""
    body = []
    for index, (model, counts) in enumerate(models.items()):
        rate, resolved = counts["resolved_rate"], counts["resolved"]
        width = round(BAR_WIDTH * rate)
        title = f"{model}: resolved rate {percent(rate)}, {resolved} resolved over {tasks} tasks"
        body += [_label(index, model), _bar(index, BAR_X, width, color(RESOLVED), title, RESOLVED),
                 _after(index, BAR_X + width, f"{percent(rate)} ({resolved})")]  # fmt: skip
    return _svg("resolved", len(models), body, "resolved rate by model")


def _unresolved(counts: dict[str, Any]) -> list[tuple[str, int]]:
    return [(reason, n) for reason, n in counts["reasons"].items() if reason != RESOLVED and n]


def reasons_chart(models: dict[str, Any]) -> str:
    """Each model's predictions that did not resolve, one segment a reason."""
    stacks = {model: _unresolved(counts) for model, counts in models.items()}
    widest = max((sum(n for _, n in stack) for stack in stacks.values()), default=0)
    unit = BAR_WIDTH / widest if widest else 0.0
    body = []
    for index, (model, stack) in enumerate(stacks.items()):
        body.append(_label(index, model))
        done = 0
        for reason, count in stack:
            x, end = BAR_X + round(done * unit), BAR_X + round((done + count) * unit)
            title = f"{model}: {reason} {count}"
            body.append(_bar(index, x, end - x, color(reason), title, reason))
            done += count
        body.append(_after(index, BAR_X + round(done * unit), str(done)))
    return _svg("reasons", len(stacks), body, "unresolved predictions by reason")


def legend() -> str:
    """What each color of the reasons chart stands for."""
    keys = [reason for reason in REASONS if reason != RESOLVED]
    items = [
        f'<span class="key"><span class="swatch" style="background:{color(reason)}"></span>'
        f"{e(reason)}</span>"
        for reason in [*keys, "other"]
    ]
    return f'<p class="legend">{" ".join(items)}</p>'


def pass_chart(models: dict[str, Any]) -> str | None:
    """pass@k of each model with trials, a bar each k; None when no model has trials."""
    rows = [
        (model, k, rate, counts["pass_at_1_sd"])
        for model, counts in models.items()
        if counts["trials"] > 1
        for k, rate in counts["pass_at"].items()
    ]
    if not rows:
        return None
    body = []
    for index, (model, k, rate, spread) in enumerate(rows):
        width = round(BAR_WIDTH * rate)
        text = percent(rate)
        if k == "1" and spread is not None:
            text += f" ± {percent(spread)}"
        body += [_label(index, f"{model} pass@{k}"),
                 _bar(index, BAR_X, width, PASS_COLOR, f"{model}: pass@{k} {text}", f"pass-{k}"),
                 _after(index, BAR_X + width, text)]  # fmt: skip
    return _svg("pass", len(rows), body, "pass@k by model")
