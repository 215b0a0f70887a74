"""The page of tests/e2e/recordrun.py's run in headless Chromium, as an evaluator comparing agents
reads it: why each prediction ended and its signals' kinds in its cell, trials a line each, the
agent's test_patch calls, each model's reasons, pass@k, calls and spend; the pictures' bars
with their numbers in their titles, and, in a screenshot, drawn where those numbers say; every
name from the user as text."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from ssebench.evaluate.charts import COLORS, PASS_COLOR

from .pages import needs_chromium, screenshot, shown
from .recordrun import ODD, RecordRun

pytestmark = [pytest.mark.timeout(900), needs_chromium]


def texts(rows: list[list[tuple[str, str, list[tuple[str, str]]]]]) -> list[list[str]]:
    return [[text for _, text, _ in row] for row in rows]


def test_the_page_says_why_each_ended_and_compares_the_agents(
    recorded_run: RecordRun, tmp_path: Path
) -> None:
    page = shown(recorded_run.out / "index.html", tmp_path)
    assert page.texts["h2"] == [
        "Resolved rate", "Not resolved, by reason", "pass@k over trials", "Models",
        "Tasks × models", "test_patch calls", "Errors",
    ]  # fmt: skip
    assert page.texts["p"][0].endswith(", --timeout 30 s, -j 2")
    assert texts(page.tables["models"])[1:] == [
        ["m1", "12.5%", "1", "6", "2", "1", "0", "9", "1",
         "resolved 1, empty-patch 1, patch-does-not-apply 1, build-failed 1, poc-still-triggers "
         "1, intent-failed 1, functional-failed 1, timeout 1, error 1",
         "", "", "$0.75, $0.25 each, $0.75 per resolved", "1,500 in, 300 out", "30 s each"],
        [ODD, "12.5%", "3", "3", "0", "0", "6", "6", "0", "resolved 3, poc-still-triggers 3",
         "pass@1 12.5% ± 12.5%; pass@2 20.8%; pass@3 25.0%", "", "", "", ""],
        ["agent", "12.5%", "1", "0", "0", "0", "7", "1", "0", "resolved 1", "",
         "3 in 1 prediction, 3 each", "", "1,200 in, 300 out", "62 s each"],
    ]  # fmt: skip
    grid = {row[0][1]: row[1:] for row in page.tables["grid"][1:]}
    assert {task: (cells[0][0], cells[0][1]) for task, cells in grid.items()} == {
        "apply": ("unresolved", "unresolved: patch-does-not-apply"),
        "build": ("unresolved", "unresolved: build-failed"),
        "empty": ("empty", "empty patch"),
        "functional": ("unresolved", "unresolved: functional-failed"),
        "intent": ("unresolved", "unresolved: intent-failed"),
        "poc": ("unresolved", "unresolved: poc-still-triggers"),
        "resolved": ("resolved flagged", "resolved, flagged: autoload-file"),
        "slow": ("error", "error: timeout no verdict within --timeout 30 s: the grade was "
                 "stopped, its cases killed"),
        "zz": ("error", f"error unknown task 'zz': no folder {recorded_run.tasks / 'zz'}"),
    }  # fmt: skip
    assert grid["poc"][1][:2] == ("trials", "trial 1: unresolved: poc-still-triggers trial 2: "
                                  "unresolved: poc-still-triggers trial 3: resolved")  # fmt: skip
    kind, said, links = grid["resolved"][2]
    assert (kind, said) == ("resolved", "resolved")
    number = 15  # the agent's line, the 16th, numbered from 0
    assert links[0] == (
        "3 test_patch calls, the last: test_patch result: every check that ran passed.",
        f"#calls-{number}",
    )
    calls = texts(page.tables["calls"])
    assert calls[0] == ["prediction", "call", "started", "took", "level", "headline", "checks"]
    assert [(row[0], row[1], row[4], row[6]) for row in calls[1:]] == [
        ("agent/resolved", "1", "2", "build: passed; functional tests: failed"),
        ("agent/resolved", "2", "2", "build: passed; functional tests: passed"),
        ("agent/resolved", "3", "2", "build: passed; functional tests: passed"),
    ]
    assert not {"script", "img", "link", "iframe", "object", "i", "b"} & set(page.tags)


def test_the_pictures_bars_carry_their_numbers(recorded_run: RecordRun, tmp_path: Path) -> None:
    page = shown(recorded_run.out / "index.html", tmp_path)
    resolved = page.charts["chart chart-resolved"]
    assert [(bar.width, bar.title) for bar in resolved.bars] == [
        (50, "m1: resolved rate 12.5%, 1 resolved over 8 tasks"),
        (50, f"{ODD}: resolved rate 12.5%, 3 resolved over 8 tasks"),
        (50, "agent: resolved rate 12.5%, 1 resolved over 8 tasks"),
    ]
    assert resolved.texts == ["m1", "12.5% (1)", ODD, "12.5% (3)", "agent", "12.5% (1)"]
    # m1's eight that did not resolve, one a reason, are the widest stack: 50 px each.
    reasons = page.charts["chart chart-reasons"].bars
    assert [(bar.x, bar.width, bar.title) for bar in reasons] == [
        *((230 + 50 * n, 50, f"m1: {reason} 1") for n, reason in enumerate(
            ["empty-patch", "patch-does-not-apply", "build-failed", "poc-still-triggers",
             "intent-failed", "functional-failed", "timeout", "error"])),
        (230, 150, f"{ODD}: poc-still-triggers 3"),
    ]  # fmt: skip
    assert [(bar.width, bar.title) for bar in page.charts["chart chart-pass"].bars] == [
        (50, f"{ODD}: pass@1 12.5% ± 12.5%"),
        (83, f"{ODD}: pass@2 20.8%"),
        (100, f"{ODD}: pass@3 25.0%"),
    ]


def test_a_screenshot_draws_each_bar_where_its_number_says(
    recorded_run: RecordRun, tmp_path: Path
) -> None:
    """Each bar is its color's run of pixels, BAR (16) rows tall, as wide as its number says,
    every bar of a picture starting at one column; the legend's swatches are 10 wide."""
    drawn = screenshot(recorded_run.out / "index.html", tmp_path)

    def widths(color: str) -> Counter[int]:
        return Counter(length for _, _, length in drawn.runs(color))

    def starts(color: str) -> set[int]:
        return {x for _, x, length in drawn.runs(color) if length > 10}

    assert widths(COLORS["resolved"]) == {50: 48}  # three rates of 12.5%, one row each
    assert widths(COLORS["poc-still-triggers"]) == {50: 16, 150: 16, 10: 10}
    assert widths(COLORS["build-failed"]) == {50: 16, 10: 10}
    assert widths(PASS_COLOR) == {50: 16, 83: 16, 100: 16}
    assert len(starts(COLORS["resolved"]) | starts(PASS_COLOR)) == 1  # one left edge
    (left,) = starts(COLORS["resolved"])
    assert starts(COLORS["poc-still-triggers"]) == {left + 150, left}
    assert starts(COLORS["build-failed"]) == {left + 100}
