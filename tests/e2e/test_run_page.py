"""`OUT/index.html` in a real browser: headless Chromium loads the page from the run's folder
(`file://`), and the test reads what it shows (the DOM after loading): each model's rate and
counts, every cell of the task × model grid with its links, the errors; every link leads to a
file of the run, nothing is fetched or scripted, and names from the user stay text."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote

import pytest

from ssebench.testing import task_toml

from .pages import needs_chromium, shown
from .test_batch import RunCli
from .test_validate import FIX

pytestmark = [pytest.mark.timeout(300), needs_chromium]
ODD_TASK = 'we&ird <i>#1 %?"'  # a plain folder name, and everything a page or a URL must escape
ODD_MODEL = "<b>x&y</b>"  # its `/` makes the folder <b>x&y<__b>
FIXED = task_toml({"build": "grep -q fixed state.txt"})  # resolved by FIX


def run(run_cli: RunCli, tmp_path: Path) -> Path:
    """A run of three models over three tasks, with every kind of cell; one verdict flagged."""
    tasks, out = tmp_path / "tasks", tmp_path / "out"
    for name in ("a", "b", ODD_TASK):
        (tasks / name / "src").mkdir(parents=True)
        (tasks / name / "src" / "state.txt").write_text("bug\n")
        (tasks / name / "task.toml").write_text(FIXED)
    preds = tmp_path / "predictions.json"
    objects = [
        {"task": "a", "model": "m1", "patch": FIX},
        {"task": "b", "model": "m1", "patch": None},
        {"task": ODD_TASK, "model": "m1", "patch": FIX},
        {"instance_id": "a", "model_name_or_path": "org/m2", "model_patch": "not a diff"},
        {"task": "zz", "model": "org/m2", "patch": FIX},
        {"task": "b", "model": ODD_MODEL, "patch": FIX},
        {"task": "a", "model": ODD_MODEL, "patch": 3},
    ]
    # A JSON list, as SWE-bench takes one: an object a line, from line 2.
    preds.write_text("[\n" + ",\n".join(map(json.dumps, objects)) + "\n]\n")
    args = ["grade", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(out)]
    assert run_cli(*args, "-j", "2").returncode == 1
    # A reviewer's signal, as a grade lists it: the rerun reads it from the saved verdict.
    result = out / "m1" / ODD_TASK / "result.json"
    signal = {"kind": "autoload-file", "path": "conftest.py", "line": 1, "detail": "x"}
    result.write_text(json.dumps({**json.loads(result.read_text()), "signals": [signal]}))
    done = run_cli(*args)
    assert json.loads(done.stdout)["flagged_ids"] == [f"m1/{ODD_TASK}"]
    return out


def links(folder: str, task: str, *logs: str) -> list[tuple[str, str]]:
    """A verdict's links: its result, patch, grade.log, then each case's log."""
    files = ["result.json", "patch.diff", "grade.log"]
    return [(name, f"{folder}/{task}/{name}") for name in files] + [
        (log, f"{folder}/{task}/logs/{log}.log") for log in logs
    ]


def test_the_page_shows_the_run_in_a_real_browser(run_cli: RunCli, tmp_path: Path) -> None:
    out = run(run_cli, tmp_path)
    page = shown(out / "index.html", tmp_path)
    assert page.texts["title"] == page.texts["h1"] == ["ssebench: predictions.json"]
    assert page.texts["h2"] == [
        "Resolved rate", "Not resolved, by reason", "Models", "Tasks × models", "Errors"
    ]  # fmt: skip
    run_line, tally, legend = page.texts["p"]
    assert run_line.startswith("run predictions: started ")
    assert tally == "7 predictions: 3 resolved, 2 unresolved, 2 errors; 3 tasks in --tasks"
    assert legend.split() == [
        "empty-patch", "patch-does-not-apply", "build-failed", "poc-still-triggers",
        "intent-failed", "functional-failed", "timeout", "error", "other",
    ]  # fmt: skip
    assert [[text for _, text, _ in row] for row in page.tables["models"]] == [
        ["model", "resolved rate", "resolved", "unresolved", "errors", "empty patch",
         "no prediction", "predictions", "flagged", "why", "pass@k", "test_patch calls", "cost",
         "tokens", "agent time"],
        ["m1", "66.7%", "2", "1", "0", "1", "0", "3", "1", "resolved 2, empty-patch 1",
         *[""] * 5],
        ["org/m2", "0.0%", "0", "1", "1", "0", "2", "2", "0", "patch-does-not-apply 1, error 1",
         *[""] * 5],
        [ODD_MODEL, "33.3%", "1", "0", "1", "0", "1", "2", "0", "resolved 1, error 1",
         *[""] * 5],
    ]  # fmt: skip
    assert {cls for row in page.tables["models"][1:] for cls, _, _ in row[1:9]} == {"number"}
    # The pictures: a bar for each model's rate, and its predictions that did not resolve.
    assert [(b.width, b.title) for b in page.charts["chart chart-resolved"].bars] == [
        (267, "m1: resolved rate 66.7%, 2 resolved over 3 tasks"),
        (0, "org/m2: resolved rate 0.0%, 0 resolved over 3 tasks"),
        (133, f"{ODD_MODEL}: resolved rate 33.3%, 1 resolved over 3 tasks"),
    ]
    assert [(b.kind, b.width, b.title) for b in page.charts["chart chart-reasons"].bars] == [
        ("bar bar-empty-patch", 200, "m1: empty-patch 1"),
        ("bar bar-patch-does-not-apply", 200, "org/m2: patch-does-not-apply 1"),
        ("bar bar-error", 200, "org/m2: error 1"),
        ("bar bar-error", 200, f"{ODD_MODEL}: error 1"),
    ]
    odd = "we%26ird%20%3Ci%3E%231%20%25%3F%22"  # the task's folder in a URL
    folder = "%3Cb%3Ex%26y%3C__b%3E"
    assert page.tables["grid"] == [
        [("th", "task", []), ("th", "m1", []), ("th", "org/m2", []), ("th", ODD_MODEL, [])],
        [("th", "a", []),
         ("resolved", "resolved", links("m1", "a", "build-0")),
         ("unresolved", "unresolved: patch-does-not-apply", links("org__m2", "a")),
         ("error", "error the patch must be a string", [])],
        [("th", "b", []),
         ("empty", "empty patch", []),
         ("incomplete", "no prediction", []),
         ("resolved", "resolved", links(folder, "b", "build-0"))],
        [("th", ODD_TASK, []),
         ("resolved flagged", "resolved, flagged: autoload-file", links("m1", odd, "build-0")),
         ("incomplete", "no prediction", []),
         ("incomplete", "no prediction", [])],
        [("th", "zz", []),
         ("incomplete", "no prediction", []),
         ("error", f"error unknown task 'zz': no folder {out.parent / 'tasks' / 'zz'}", []),
         ("incomplete", "no prediction", [])],
    ]  # fmt: skip
    assert [[text for _, text, _ in row] for row in page.tables["errors"]] == [
        ["line", "model", "task", "error"],
        ["6", "org/m2", "zz", f"unknown task 'zz': no folder {out.parent / 'tasks' / 'zz'}"],
        ["8", ODD_MODEL, "a", "the patch must be a string"],
    ]
    # Every link is relative and leads to a file of the run; nothing runs, nothing is fetched.
    hrefs = [href for table in page.tables.values() for row in table for _, _, ls in row
             for _, href in ls]  # fmt: skip
    assert len(hrefs) == 15
    assert all((out / unquote(href)).is_file() for href in hrefs), hrefs
    assert not any(":" in href or href.startswith("/") for href in hrefs)
    assert not {"script", "img", "link", "iframe", "object", "b", "i"} & set(page.tags)


def test_a_shard_writes_its_own_page(run_cli: RunCli, tmp_path: Path) -> None:
    tasks, out = tmp_path / "tasks", tmp_path / "out"
    (tasks / "a" / "src").mkdir(parents=True)
    (tasks / "a" / "src" / "state.txt").write_text("bug\n")
    (tasks / "a" / "task.toml").write_text(FIXED)
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"task": "a", "patch": FIX}) + "\n")
    done = run_cli("grade", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(out),
                   "--shard", "0/2")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "default",
        "index-0-of-2.html",
        "run.json",
        "summary-0-of-2.json",
    ]  # a shard writes no SWE-bench report: the merge does
    page = shown(out / "index-0-of-2.html", tmp_path)
    assert page.texts["h1"] == ["ssebench: p.jsonl, shard 0 of 2"]
    assert [cls for cls, _, _ in page.tables["grid"][1]] == ["th", "resolved"]
