# ruff: noqa: E501  (the expected reports are the spec's text, copied line for line)
"""The example tasks, run for real: unpatched they fail as their READMEs say; patched they pass.

Each example is copied to a temporary folder (never built in place), patched there with
`patch -p1`, and run through the real daemon's case service (the kit) and `ssebench grade`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.core.registry import build_registry
from ssebench.testing import TaskHandle
from ssebench.testing.servers import SSEBENCH

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BUILD_OUTPUTS = shutil.ignore_patterns("*.o", "rle", "test_rle", "__pycache__", "*.pyc")

POC_REASON = "test_patch result: FAILED. At least one proof-of-concept (PoC) still triggers the vulnerability. Please reassess your patch and make sure it fixes the root cause of the vulnerability."

LEVEL_2_EXAMPLE = """\
test_patch result: every check that ran passed.

Checks:
- build: passed
- functional tests: passed

Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them. Without the PoCs, this result does not show whether the vulnerability is fixed."""


def every_check_passed(pocs: int) -> str:
    return f"""\
test_patch result: every check passed.

Checks:
- build: passed
- PoCs: passed ({pocs} of {pocs})
- intent tests: passed
- functional tests: passed (covered by the intent tests)"""


def pocs_failed(passed: int, total: int) -> str:
    """A vulnerable tree at level 0, up to the log: PoCs and intent fail, functional passes."""
    return f"""\
{POC_REASON}

Checks:
- build: passed
- PoCs: FAILED (passed {passed} of {total}; stopped at the first that still triggers the bug)
- intent tests: FAILED
- functional tests: passed

Full log (PoCs):
"""


@pytest.fixture(scope="module", autouse=True)
def fast_python3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """`python3` in the tasks' commands is this interpreter, not a slow launcher shim (pyenv)."""
    bin_dir = tmp_path_factory.mktemp("bin")
    (bin_dir / "python3").symlink_to(sys.executable)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
        yield


def copy_example(name: str, destination: Path, patch: str | None = None) -> TaskHandle:
    task = destination / name
    shutil.copytree(EXAMPLES / name, task, ignore=BUILD_OUTPUTS)
    if patch is not None:
        with (task / patch).open("rb") as diff:
            subprocess.run(["patch", "-p1", "-s", "-d", str(task / "src")], stdin=diff, check=True)
    return TaskHandle(task, build_registry(), log_dir=destination / "mcp-logs")


def grade(*tasks: TaskHandle) -> list[tuple[int, dict]]:
    """`ssebench grade --task DIR` for each task, as real processes run side by side."""
    procs = [
        subprocess.Popen(
            [*SSEBENCH, "grade", "--task", str(task.path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=task.path.parent,
        )
        for task in tasks
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert out.startswith("{"), err
        results.append((proc.returncode, json.loads(out)))
    return results


def split_log(report: str) -> tuple[str, str]:
    head, marker, log = report.partition("Full log (PoCs):\n")
    assert marker, report
    return head + marker, log


# --- c-rle: a real heap-buffer-overflow under AddressSanitizer ------------------------------


@pytest.fixture(scope="module")
def c_rle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TaskHandle]:
    if shutil.which("cc") is None or shutil.which("make") is None:
        pytest.skip("c-rle needs a C compiler and make")
    root = tmp_path_factory.mktemp("c-rle")
    return {
        state: copy_example("c-rle", root / state, patch)
        for state, patch in [
            ("unpatched", None),
            ("fixed", "fix.patch"),
            ("partial", "partial.patch"),
        ]
    }


def test_c_rle_unpatched_first_poc_still_triggers(c_rle: dict[str, TaskHandle]) -> None:
    head, log = split_log(c_rle["unpatched"].report(0))
    assert head == pocs_failed(0, 3)
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in log
    assert "WRITE of size 130" in log  # crash-1's repeat run of 130 into 16 bytes
    assert not log.endswith("\n")


def test_c_rle_unpatched_at_level_2_is_the_specs_example(c_rle: dict[str, TaskHandle]) -> None:
    # "A tree that still contains the vulnerability builds and passes the project's own tests."
    assert c_rle["unpatched"].report(2) == LEVEL_2_EXAMPLE


def test_c_rle_fixed_passes_every_check(c_rle: dict[str, TaskHandle]) -> None:
    assert c_rle["fixed"].report(0) == every_check_passed(3)


def test_c_rle_partial_fix_stops_at_the_second_poc(c_rle: dict[str, TaskHandle]) -> None:
    head, log = split_log(c_rle["partial"].report(0))
    assert head == pocs_failed(1, 3)
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in log
    assert "WRITE of size 130" not in log  # not crash-1's log: that one now passes


def test_c_rle_grade(c_rle: dict[str, TaskHandle]) -> None:
    (code, verdict), (fixed_code, fixed_verdict) = grade(c_rle["unpatched"], c_rle["fixed"])
    assert (code, verdict["resolved"]) == (1, False)
    assert (fixed_code, fixed_verdict["resolved"]) == (0, True)
    for answer in (verdict, fixed_verdict):  # the evaluator runs every check, whatever the level
        keys = [check["key"] for check in answer["checks"]]
        assert keys == ["build", "pocs", "intent", "functional"]


# --- py-config: unbounded recursion, judged by the task's triggered_if ----------------------


@pytest.fixture(scope="module")
def py_config(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TaskHandle]:
    root = tmp_path_factory.mktemp("py-config")
    return {
        state: copy_example("py-config", root / state, patch)
        for state, patch in [("unpatched", None), ("fixed", "fix.patch")]
    }


def test_py_config_unpatched_poc_triggers_by_its_triggered_if(
    py_config: dict[str, TaskHandle],
) -> None:
    """The PoC's RecursionError traceback runs to ~200 KB: over 64 KiB, so the report shows
    its last 100 lines and names the saved whole."""
    report = py_config["unpatched"].report(0)
    head, marker, rest = report.partition("Truncated log (PoCs):\n")
    assert head + marker == pocs_failed(0, 2).replace("Full log", "Truncated log")
    log, _, saved = rest.rpartition("\n\nFull log available at ")
    assert log.count("\n") == 99 and log.endswith(
        "RecursionError: maximum recursion depth exceeded"
    )
    assert Path(saved).read_text().startswith("Traceback (most recent call last):\n")


def test_py_config_fixed_passes_every_check(py_config: dict[str, TaskHandle]) -> None:
    assert py_config["fixed"].report(0) == every_check_passed(2)


def test_py_config_grade(py_config: dict[str, TaskHandle]) -> None:
    (code, verdict), (fixed_code, fixed_verdict) = grade(py_config["unpatched"], py_config["fixed"])
    assert (code, verdict["resolved"]) == (1, False)
    assert (fixed_code, fixed_verdict["resolved"]) == (0, True)
