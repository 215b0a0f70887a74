"""A rejudge (evaluate/rejudge.py) from what a grade saved, in process: today's judge reads the
saved log and exit status, and the status the case's sanitizers were told to end it with; a
case the orchestrator's rules now reach that the grade never ran, a missing log or a verdict of
another patch is one line, and the verdict stays as it was."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from ssebench.core.daemons.door import load_task
from ssebench.core.registry import build_registry
from ssebench.evaluate.digests import sha256
from ssebench.evaluate.predictions import Prediction
from ssebench.evaluate.rejudge import Rejudged, rejudge

CHECKS = build_registry().checks
PATCH = "--- a/x\n+++ b/x\n"


def case(index: int, passed: bool, exit_code: int, sanitizer_exit: int | None) -> dict[str, Any]:
    return {"index": index, "passed": passed, "exit_code": exit_code, "signal": None,
            "timed_out": False, "seconds": 0.1, "sanitizer_exit": sanitizer_exit}  # fmt: skip


def saved(folder: Path, pocs: list[dict[str, Any]], *, patch: str = PATCH) -> Path:
    """A grade's folder: a build that passed, PoCs as given, each case's log."""
    checks = [
        {"key": "build", "name": "build", "status": "passed", "detail": None,
         "cases": [case(0, True, 0, 88)]},
        {"key": "pocs", "name": "PoCs", "status": "passed" if all(c["passed"] for c in pocs)
         else "failed", "detail": None, "cases": pocs},
        *({"key": key, "name": name, "status": "passed", "detail": "the task has none",
           "cases": []} for key, name in (("intent", "intent tests"),
                                          ("functional", "functional tests"))),
    ]  # fmt: skip
    result = {
        "resolved": all(c["passed"] for c in pocs),
        "reason": "resolved" if all(c["passed"] for c in pocs) else "poc-still-triggers",
        "patch": {"applied": True, "error": None, "dropped": []}, "protected": {"reverted": []},
        "signals": [], "checks": checks, "graded_with": {"patch_sha256": sha256(patch.encode())},
    }  # fmt: skip
    (folder / "logs").mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps(result))
    (folder / "logs" / "build-0.log").write_text("built\n")
    for one in pocs:
        (folder / "logs" / f"pocs-{one['index']}.log").write_text("ran\n")
    return folder


def task(tmp_path: Path, pocs: int, options: str = "") -> Any:
    folder = tmp_path / "task"
    (folder / "src").mkdir(parents=True, exist_ok=True)
    cases = ", ".join(['"true"'] * pocs)
    (folder / "task.toml").write_text(
        f'source = "src"\n[checks.build]\nrun = "true"\n[checks.pocs]\ncases = [{cases}]\n{options}'
    )
    return load_task(folder, CHECKS)


def again(folder: Path, task: Any, patch: str = PATCH) -> Rejudged:
    item = Prediction(0, 1, "t", "m", patch)
    return asyncio.run(rejudge(item, folder, task, CHECKS))


def test_the_saved_sanitizer_status_is_a_report_as_the_judge_read_it(tmp_path: Path) -> None:
    """Exit status 88 with no report in the log: a trigger when it is the status the case's
    sanitizers were told to end it with, a pass when they were told another."""
    told = saved(tmp_path / "told", [case(0, False, 88, 88)])
    assert not again(told, task(tmp_path, 1)).changed
    other = saved(tmp_path / "other", [case(0, False, 88, 90)])
    judged = again(other, task(tmp_path, 1))
    assert judged.changed and (judged.after["resolved"], judged.after["reason"]) == (
        True, "resolved"
    )  # fmt: skip
    assert json.loads((other / "result.json").read_text()) == judged.after


def test_a_case_the_grade_never_ran_cannot_be_judged(tmp_path: Path) -> None:
    """The grade stopped at the first PoC that triggered; a rule under which it no longer
    does reaches the second, which never ran."""
    folder = saved(tmp_path / "g", [case(0, False, 1, 90)])
    before = (folder / "result.json").read_bytes()
    widened = task(tmp_path, 2, "triggered_if = { passing_exit_codes = [0, 1] }\n")
    with pytest.raises(ValueError) as caught:
        again(folder, widened)
    assert (
        str(caught.value)
        == "cannot rejudge from its saved logs: PoCs case 1 never ran in the grade"
    )
    assert (folder / "result.json").read_bytes() == before


def test_a_missing_log_or_another_patch_is_one_line(tmp_path: Path) -> None:
    folder = saved(tmp_path / "g", [case(0, True, 0, 90)])
    with pytest.raises(ValueError, match=r"^its verdict was graded from another patch: grade it "):
        again(folder, task(tmp_path, 1), patch="another")
    (folder / "logs" / "pocs-0.log").unlink()
    with pytest.raises(ValueError) as caught:
        again(folder, task(tmp_path, 1))
    assert str(caught.value) == (
        f"cannot rejudge from its saved logs: PoCs case 0 has no saved log "
        f"({folder / 'logs' / 'pocs-0.log'})"
    )
    with pytest.raises(ValueError, match=r"^no verdict to rejudge: grade it first"):
        again(tmp_path / "none", task(tmp_path, 1))
