"""The lint plugin alone, through ssebench's testing kit (the `ssebench_task` fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest
import ssebench_lint
from ssebench_lint import LintOptions

from ssebench.core import CaseRun
from ssebench.core.errors import ConfigError
from ssebench.core.registry import build_registry

ALONE = {"plugins": [ssebench_lint], "use_entry_points": False}
REASON = (
    "The lint check failed. Please fix the warnings it reports without changing the "
    "program's behaviour."
)


def test_clean_output_and_exit_status_0_pass(ssebench_task):
    task = ssebench_task({"lint": "echo 'main.c: 0 issues'"}, **ALONE)
    outcome = task.run_check("lint")
    assert outcome.status == "passed"
    assert outcome.check.detail(outcome) is None


def test_a_warning_line_fails_even_with_exit_status_0(ssebench_task):
    task = ssebench_task({"lint": "echo 'main.c:3: warning: unused x'"}, **ALONE)
    assert task.report(2) == (
        f"test_patch result: FAILED. {REASON}\n\n"
        "Checks:\n- lint: FAILED (warnings found)\n\n"
        "Full log (lint):\nmain.c:3: warning: unused x"
    )


def test_a_non_zero_exit_status_fails(ssebench_task):
    task = ssebench_task({"lint": "echo 'lint: cannot parse main.c'; exit 1"}, **ALONE)
    outcome = task.run_check("lint")
    assert outcome.status == "FAILED"
    assert outcome.check.detail(outcome) is None


def test_fail_on_is_read_from_the_task_table(ssebench_task):
    note = "echo 'note: style'"
    assert ssebench_task({"lint": note}, **ALONE).run_check("lint").status == "passed"
    strict = ssebench_task({"lint": {"run": note, "fail_on": "^note:"}}, **ALONE)
    assert strict.run_check("lint").status == "FAILED"
    lenient = ssebench_task({"lint": {"run": "echo 'warning: x'", "fail_on": ""}}, **ALONE)
    assert lenient.run_check("lint").status == "passed"


def test_a_bad_fail_on_names_the_key(ssebench_task):
    task = ssebench_task({"lint": {"run": "true", "fail_on": "("}}, **ALONE)
    with pytest.raises(ConfigError, match=r"checks\.lint\.fail_on: not a regular expression"):
        task.report(0)


def test_a_huge_log_is_scanned_from_disk(tmp_path: Path):
    log = tmp_path / "lint.log"
    with log.open("wb") as out:
        for _ in range(4):
            out.write(b"main.c: fine\n" * 100_000)  # 5.2 MB: several of log_search's chunks
        out.write(b"main.c:9: warning: shadowed\n")
    run = CaseRun(0, None, False, 1.0, log, LintOptions())
    assert ssebench_lint.judge(run) is False
    assert ssebench_lint.judge(CaseRun(0, None, False, 1.0, log, LintOptions(fail_on="^x"))) is True


def test_with_the_built_ins_it_runs_at_levels_0_to_2(ssebench_task):
    # No plugins=: the built-ins and every installed plugin, this one through its entry point.
    task = ssebench_task({"build": "true", "lint": "true"})
    assert task.report(2) == (
        "test_patch result: every check that ran passed.\n\n"
        "Checks:\n- build: passed\n- lint: passed\n- functional tests: passed (the task has none)"
        "\n\nNot available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing "
        "is reported about them. Without the PoCs, this result does not show whether the "
        "vulnerability is fixed."
    )
    assert task.report(3) == (
        "test_patch result: every check that ran passed.\n\n"
        "Checks:\n- build: passed\n\n"
        "Not available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, lint, "
        "functional tests. Nothing is reported about them. Without the PoCs, this result "
        "does not show whether the vulnerability is fixed."
    )


def test_the_installed_entry_point_provides_it():
    registry = build_registry()
    assert registry.by_key("lint") is ssebench_lint.LINT
    assert registry.sources["lint"] == '"lint" (ssebench-lint 0.1.0)'
