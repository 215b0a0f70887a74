"""Benchmark runs for the tests of its backends and engines: the tasks, a whole run, and what it
left, compared field by field (timings aside)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ssebench.daemon.sanitizers import EXIT_CODES
from ssebench.testing import task_toml

from .test_grade_patch import BUILD_OUTPUTS, EXAMPLES, tree_hash
from .test_validate import SOUND

RunCli = Callable[..., subprocess.CompletedProcess[str]]


def make_tasks(root: Path) -> Path:
    """The C example and two small tasks (fixed by FIX), one folder per task id, in `root`."""
    if shutil.which("cc") is None or shutil.which("make") is None:
        pytest.skip("c-rle needs a C compiler and make")
    shutil.copytree(EXAMPLES / "c-rle", root / "c-rle", ignore=BUILD_OUTPUTS)
    for name in ("small-a", "small-b"):
        (root / name / "src").mkdir(parents=True)
        (root / name / "src" / "state.txt").write_text("bug\n")
        (root / name / "task.toml").write_text(task_toml(SOUND))
    return root


def untimed(data: Any) -> Any:
    """`data` without what differs between two grades of one patch: its timings (every field
    but `seconds`), and a case's exit status when it is one its sanitizer may end it with (a
    status drawn for each case: daemon/sanitizers.py), shown as "N"."""
    if isinstance(data, dict):
        return {
            key: "N" if key == "exit_code" and value in EXIT_CODES else untimed(value)
            for key, value in data.items()
            if key != "seconds"
        }
    if isinstance(data, list):
        return [untimed(value) for value in data]
    return data


def left_in(out: Path) -> dict[str, Any]:
    """What a run left in `out`: its summary, and each verdict (timings taken out), what it was
    graded with (but the grader: here or in an image), patch and log names."""
    left: dict[str, Any] = {"summary": json.loads((out / "summary.json").read_text())}
    for result in sorted(out.glob("*/*/result.json")):
        folder = result.parent
        verdict = untimed(json.loads(result.read_text()))
        graded_with = verdict.pop("graded_with")
        del graded_with["grader"]
        left[folder.relative_to(out).as_posix()] = {
            "result": verdict,
            "graded_with": graded_with,
            "patch": (folder / "patch.diff").read_text(),
            "logs": sorted(p.name for p in (folder / "logs").glob("*")),
        }
    return left


def graded(run_cli: RunCli, tasks: Path, preds: Path, out: Path, backend: str, *,
           code: int = 0) -> dict[str, Any]:  # fmt: skip
    """A whole run with -j 2 on `backend`, which must end with `code`; what it left."""
    before = tree_hash(tasks)
    done = run_cli("grade", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(out),
                   "-j", "2", "--backend", backend, timeout=600)  # fmt: skip
    assert done.returncode == code, done.stderr
    assert tree_hash(tasks) == before
    return left_in(out)
