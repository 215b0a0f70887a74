"""A benchmark run's bookkeeping (evaluate/batch.py): what is written, what counts as done, how a
grade that gave no verdict is recorded, and summary.json. Grades here are a stand-in script
whose behaviour the patch text picks; tests/e2e/test_batch.py grades real tasks."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
import sys
from importlib.metadata import version
from pathlib import Path
from unittest.mock import ANY

import pytest

from ssebench.evaluate.batch import (
    ERROR,
    RESOLVED,
    UNRESOLVED,
    grade_all,
)
from ssebench.evaluate.digests import task_sha256
from ssebench.evaluate.predictions import BadLine, Prediction
from ssebench.evaluate.verdicts import dump, read_saved, write_json

# Stands in for ssebench's child grading a patch: it is asked by a request (here, JSON naming the
# task and the patch file) and answers with an `Ended` record on stdout; the patch says what to do.
STAND_IN = r"""
import json, os, signal, sys
asked = json.loads(sys.argv[1])
what = open(asked["patch"]).read()
print("ssebench: build: started", file=sys.stderr)
print(f"asked for {asked['task']}", file=sys.stderr)

def grade(resolved, signals=()):
    applied = {"applied": True, "error": None, "dropped": []}
    reason = "resolved" if resolved else "build-failed"
    verdict = {"resolved": resolved, "reason": reason, "patch": applied,
               "protected": {"reverted": []}, "signals": list(signals), "checks": []}
    print(json.dumps({"status": 0 if resolved else 1, "verdict": verdict}))
    sys.exit(0 if resolved else 1)

if what in ("resolved", "unresolved"):
    grade(what == "resolved")
if what == "flagged":
    grade(True, [{"kind": "autoload-file", "path": "conftest.py", "line": 1, "detail": "x"}])
if what == "internal":  # the record says why; stderr says something else, and is not read
    print("ssebench: error: what the stderr says", file=sys.stderr)
    print("Traceback (most recent call last): ...", file=sys.stderr)
    error = "internal testing failure: the daemon went away"
    print(json.dumps({"status": 3, "error": error}))
    sys.exit(3)
if what == "killed":
    os.kill(os.getpid(), signal.SIGKILL)
if what == "silent":  # a crash before any record: its stderr is still not read
    print("ssebench: error: what the stderr says", file=sys.stderr)
    sys.exit(3)
print("not json")
"""


@pytest.fixture
def stand_in(tmp_path: Path) -> list[str]:
    script = tmp_path / "grade.py"
    script.write_text(STAND_IN)
    return [sys.executable, str(script)]


def ask(task: Path, patch: Path, logs: Path) -> str:
    return json.dumps({"task": str(task), "patch": str(patch), "logs": str(logs)})


def read_result(path: Path) -> dict[str, object] | None:
    saved = read_saved(path)
    return None if saved is None else dump(saved)


def prediction(number: int, task: str, patch: str, model: str = "m") -> Prediction:
    return Prediction(number, number + 1, task, model, patch)


def test_verdicts_errors_and_what_a_rerun_skips(tmp_path: Path, stand_in: list[str]) -> None:
    tasks, out = tmp_path / "tasks", tmp_path / "out"
    for task in ("a", "b", "c", "d", "e", "f"):
        (tasks / task).mkdir(parents=True)
    items = [
        prediction(0, "a", "resolved"),
        prediction(1, "b", "unresolved", model="org/x"),
        prediction(2, "c", "internal"),
        prediction(3, "d", "killed"),
        prediction(4, "e", "garbage"),
        prediction(5, "f", "silent"),
        prediction(6, "zz", "resolved"),
        BadLine(7, 8, "not a JSON object"),
    ]
    seen: list[str] = []
    graded = asyncio.run(
        grade_all(items, tasks, out, jobs=2, command=stand_in, request=ask,
                  on_graded=lambda g: seen.append(g.verdict))
    )  # fmt: skip
    assert [(g.verdict, g.error, g.reused) for g in graded] == [
        (RESOLVED, None, False),
        (UNRESOLVED, None, False),
        (ERROR, "exit status 3: internal testing failure: the daemon went away", False),
        (ERROR, "killed by signal 9", False),
        (ERROR, "exit status 0 but no verdict on stdout", False),
        (ERROR, "exit status 3 but no verdict on stdout", False),
        (ERROR, f"unknown task 'zz': no folder {tasks / 'zz'}", False),
        (ERROR, "not a JSON object", False),
    ]
    assert sorted(seen) == sorted(g.verdict for g in graded)
    assert [g.why for g in graded] == ["resolved", "build-failed", *["error"] * 6]
    saved = json.loads((out / "m/a/result.json").read_text())
    assert saved == {
        "resolved": True,
        "reason": "resolved",
        "patch": {"applied": True, "error": None, "dropped": []},
        "protected": {"reverted": []},
        "signals": [],
        "checks": [],
        "graded_with": ANY,
        "agent_run": {"test_patch_calls": None, "cost": None, "tokens": None, "duration_s": None},
    }
    assert saved["graded_with"] == {
        "model": "m",
        "task": "a",
        "patch_sha256": hashlib.sha256(b"resolved").hexdigest(),
        "task_sha256": task_sha256(tasks / "a"),
        "ssebench": version("ssebench"),
        "grader": "locally, confined",
    }
    assert (out / "org__x/b/patch.diff").read_text() == "unresolved"
    assert (out / "m/c/grade.log").read_text().startswith("ssebench: build: started\n")
    assert (out / "m/a/grade.log").read_text().endswith(f"asked for {tasks / 'a'}\n")
    assert sorted(p.name for p in out.glob("*/*/result.json")) == ["result.json"] * 2
    # A rerun takes the two verdicts as they are and tries every error again.
    again = asyncio.run(grade_all(items, tasks, out, jobs=2, command=stand_in, request=ask))
    assert [(g.verdict, g.reused) for g in again] == [
        (RESOLVED, True),
        (UNRESOLVED, True),
        *[(ERROR, False)] * 6,
    ]


def test_predictions_start_in_the_order_of_the_file(tmp_path: Path, stand_in: list[str]) -> None:
    """However long each task takes to hash: a run is taken in order (a user watching it, a
    Ctrl-C after the first prediction, a slow task further down all expect that)."""
    tasks, out = tmp_path / "tasks", tmp_path / "out"
    (tasks / "small").mkdir(parents=True)
    (tasks / "big").mkdir()
    for number in range(3000):  # its hash takes far longer than the small one's
        (tasks / "big" / f"file-{number}.c").write_text(f"int x{number};\n" * 50)
    items = [prediction(0, "big", "resolved"), prediction(1, "small", "resolved"),
             prediction(2, "big", "unresolved", model="n")]  # fmt: skip
    seen: list[str] = []
    asyncio.run(
        grade_all(items, tasks, out, jobs=1, command=stand_in, request=ask,
                  on_graded=lambda g: seen.append(f"{g.item.model}/{g.item.task}"))
    )  # fmt: skip
    assert seen == ["m/big", "m/small", "n/big"]


def test_an_empty_patch_is_unresolved_ungraded_and_signals_flag_a_verdict(
    tmp_path: Path, stand_in: list[str]
) -> None:
    tasks, out = tmp_path / "tasks", tmp_path / "out"
    for task in ("a", "b", "c"):
        (tasks / task).mkdir(parents=True)
    items = [prediction(0, "a", ""), prediction(1, "b", "flagged"), prediction(2, "c", "resolved")]
    graded = asyncio.run(grade_all(items, tasks, out, command=stand_in, request=ask))
    assert [(g.verdict, g.empty, bool(g.flagged)) for g in graded] == [
        (UNRESOLVED, True, False),  # never graded: nothing written for it
        (RESOLVED, False, True),
        (RESOLVED, False, False),  # no signals: not flagged
    ]
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [
        "m", "m/b", "m/b/grade.log", "m/b/patch.diff", "m/b/result.json",
        "m/c", "m/c/grade.log", "m/c/patch.diff", "m/c/result.json",
    ]  # fmt: skip
    # A rerun reads the flag from the saved verdict.
    again = asyncio.run(grade_all(items, tasks, out, command=stand_in, request=ask))
    assert [(g.verdict, g.reused, bool(g.flagged)) for g in again] == [
        (UNRESOLVED, False, False), (RESOLVED, True, True), (RESOLVED, True, False),
    ]  # fmt: skip


def test_a_result_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "result.json"
    write_json(path, {"resolved": False})
    assert read_result(path) == {"resolved": False}
    with pytest.raises(TypeError):
        write_json(path, {"resolved": object()})
    assert read_result(path) == {"resolved": False}  # the old one stands, no temp file left
    assert [p.name for p in path.parent.iterdir()] == ["result.json"]


def test_a_result_follows_the_umask(tmp_path: Path) -> None:
    """As the logs beside it do: 0644 under 022, so a web server's user serves the run."""
    for umask, mode in ((0o022, 0o644), (0o027, 0o640)):
        old = os.umask(umask)
        try:
            write_json(tmp_path / f"{umask:o}" / "result.json", {"resolved": False})
        finally:
            os.umask(old)
        assert stat.S_IMODE((tmp_path / f"{umask:o}" / "result.json").stat().st_mode) == mode


@pytest.mark.parametrize("text", ['{"resolved": tr', '{"checks": []}', '{"resolved": 1}', "[]"])
def test_anything_but_a_whole_verdict_is_not_done(tmp_path: Path, text: str) -> None:
    path = tmp_path / "result.json"
    path.write_text(text)
    assert read_result(path) is None
    assert read_result(tmp_path / "missing.json") is None
