"""Benchmark runs for the tests of its backends and engines: the tasks, a whole run, and what it
left, compared field by field (timings aside)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from ssebench.daemon.sanitizers import EXIT_CODES
from ssebench.evaluate.reasons import REASONS
from ssebench.testing import task_toml

from .test_grade_patch import BUILD_OUTPUTS, EXAMPLES, tree_hash
from .test_validate import SOUND

RunCli = Callable[..., subprocess.CompletedProcess[str]]
UNSPENT = {"predictions": 0, "total": None, "mean": None}  # no line says what its run spent


def model_counts(*counts: int, rate: float, **reasons: int) -> dict[str, Any]:
    """summary.json's `models.<model>` of a model without trials whose lines say nothing of
    their runs: total, resolved, unresolved, errors, empty_patch, incomplete, its rate, and
    its predictions by reason (`build_failed=1` for `build-failed`)."""
    keys = ("total", "resolved", "unresolved", "errors", "empty_patch", "incomplete")
    return {
        **dict(zip(keys, counts, strict=True)),
        "resolved_rate": rate,
        "reasons": {reason: reasons.get(reason.replace("-", "_"), 0) for reason in REASONS},
        "trials": 1,
        "pass_at": {"1": rate},
        "pass_at_1_sd": None,
        "test_patch_calls": UNSPENT,
        "cost": {**UNSPENT, "per_resolved": None},
        "input_tokens": UNSPENT,
        "output_tokens": UNSPENT,
        "duration_s": UNSPENT,
    }


def reason_ids(**ids: list[str]) -> dict[str, list[str]]:
    """summary.json's `reason_ids`: every reason, those not given with none."""
    return {reason: ids.get(reason.replace("-", "_"), []) for reason in REASONS}


def run_fields(summary: dict[str, Any], run_id: str, jobs: int = 1,
               timeout: float | None = None) -> dict[str, Any]:  # fmt: skip
    """The run's own fields of `summary`, checked: its id, its times (ISO 8601, in order) and
    its settings (this ssebench, local, confined as this machine confines); the rest returned."""
    rest = dict(summary)
    assert rest.pop("run_id") == run_id
    started, ended = rest.pop("started"), rest.pop("ended")
    assert started <= ended and started.endswith("+00:00") and len(started) == 25
    assert rest.pop("settings") == {"ssebench": version("ssebench"), "backend": "local",
                                    "isolation": ANY_MECHANISM, "timeout": timeout,
                                    "jobs": jobs}  # fmt: skip
    return rest


class _Mechanism:
    def __eq__(self, other: object) -> bool:
        return other in ("bubblewrap", "landlock")

    def __repr__(self) -> str:
        return "bubblewrap or landlock"


ANY_MECHANISM: Any = _Mechanism()


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
    """`data` without what differs between two grades of one patch: its timings (`seconds`),
    the status each case's sanitizers were told (drawn for every case: daemon/sanitizers.py),
    and a case's exit status when it may be that draw, shown as "N": where the case saved
    what it was told, when it exited with it; where not, when it is in the draw's range."""
    if isinstance(data, dict):
        told = {data["sanitizer_exit"]} - {None} if "sanitizer_exit" in data else set(EXIT_CODES)
        return {
            key: "N" if key == "exit_code" and value in told else untimed(value)
            for key, value in data.items()
            if key not in ("seconds", "sanitizer_exit")
        }
    if isinstance(data, list):
        return [untimed(value) for value in data]
    return data


def same_run(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary less when and how it ran (`started`, `ended`, `settings`): what two runs of
    the same predictions, here or there, must agree on."""
    return {k: v for k, v in summary.items() if k not in ("started", "ended", "settings")}


def left_in(out: Path) -> dict[str, Any]:
    """What a run left in `out`: its summary (less when and how it ran), its SWE-bench reports,
    and each verdict (timings taken out), what it was graded with (but the grader: here or in
    an image), patch and log names."""
    summary = same_run(json.loads((out / "summary.json").read_text()))
    reports = {p.name: json.loads(p.read_text()) for p in sorted(out.glob("*.*.json"))}
    left: dict[str, Any] = {"summary": summary, "reports": reports}
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
