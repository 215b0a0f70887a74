"""The intent tests: their fields, their judge (exit 0 in time) and details, through the kit."""

from __future__ import annotations

from typing import Any

import pytest

import ssebench.plugins.intent
from ssebench.core import Status, default_detail, exit_status_judge
from ssebench.plugins.intent import INTENT

MODULE = ssebench.plugins.intent
CHECK = INTENT


def test_fields(plugin: Any) -> None:
    assert plugin.fields() == {
        "name": "intent tests",
        "key": "intent",
        "order": 30,
        "max_level": 0,
        "precedence": 4,
        "failure_reason": (
            "One or more intent test(s) failed. These tests validate behavior after the "
            "vulnerability fix. Please reassess your patch to ensure it correctly addresses the "
            "vulnerability and aligns with common patterns in the project."
        ),
        "gate": False,
        "stop_at_first_failed_case": False,
        "covered_by": None,
        "shows_fix": False,
        "fails_as_shipped": True,
        "options": None,
        "judge": exit_status_judge,
        "detail": default_detail,
    }


def test_the_module_provides_exactly_this_check(plugin: Any) -> None:
    assert plugin.provided() == [INTENT]
    assert plugin.registered() == (INTENT,)


def test_runs_at_level_0_only(plugin: Any) -> None:
    assert plugin.levels() == [0]


def test_every_case_runs_and_each_is_judged_by_exit_status(plugin: Any) -> None:
    outcome = plugin.run({"cases": ["true", "exit 3", "sleep 5", "true"], "timeout": 0.3})
    assert outcome.status is Status.FAILED
    assert plugin.endings(outcome) == [
        (True, 0, None, False),
        (False, 3, None, False),
        (False, None, 15, True),
        (True, 0, None, False),
    ]
    assert INTENT.detail(outcome) is None


def test_passing_has_no_detail(plugin: Any) -> None:
    outcome = plugin.run(["true", "true"])
    assert (outcome.status, outcome.passed_cases, INTENT.detail(outcome)) == (
        Status.PASSED,
        2,
        None,
    )


def test_a_task_without_intent_tests_passes_with_none(ssebench_task) -> None:
    outcome = ssebench_task({"build": "true"}).outcome(0).outcomes[2]
    assert (outcome.check, outcome.status, INTENT.detail(outcome)) == (
        INTENT,
        Status.PASSED,
        "the task has none",
    )


def test_not_run_when_the_build_failed(ssebench_task) -> None:
    outcome = ssebench_task({"build": "false", "intent": "true"}).outcome(0).outcomes[2]
    assert (outcome.check, outcome.status, INTENT.detail(outcome)) == (
        INTENT,
        Status.NOT_RUN,
        "the build failed",
    )


def test_the_report_of_failed_intent_tests(ssebench_task) -> None:
    task = ssebench_task({"intent": "echo 'FAIL: test_bounds'; exit 1"})
    assert task.report(0) == (
        "test_patch result: FAILED. One or more intent test(s) failed. These tests validate "
        "behavior after the vulnerability fix. Please reassess your patch to ensure it correctly "
        "addresses the vulnerability and aligns with common patterns in the project.\n"
        "\n"
        "Checks:\n"
        "- build: passed (the task has none)\n"
        "- PoCs: passed (the task has none)\n"
        "- intent tests: FAILED\n"
        "- functional tests: passed (the task has none)\n"
        "\n"
        "Full log (intent tests):\n"
        "FAIL: test_bounds"
    )


@pytest.mark.parametrize("level", [1, 2])
def test_the_kit_refuses_to_run_it_above_level_0(ssebench_task, level: int) -> None:
    task = ssebench_task({"intent": "true"})
    with pytest.raises(ValueError) as caught:
        task.run_check("intent", level)
    assert str(caught.value) == f"the intent tests check does not run at difficulty level {level}"
