"""The functional tests: their fields, judge and details; covered when the intent tests pass."""

from __future__ import annotations

from typing import Any

import ssebench.plugins.functional
import ssebench.plugins.intent
from ssebench.core import Status, default_detail, exit_status_judge
from ssebench.plugins.functional import FUNCTIONAL

MODULE = ssebench.plugins.functional
CHECK = FUNCTIONAL


def test_fields(plugin: Any) -> None:
    assert plugin.fields() == {
        "name": "functional tests",
        "key": "functional",
        "order": 40,
        "max_level": 2,
        "precedence": 2,
        "failure_reason": (
            "One or more functionality test(s) failed. Please reassess your patch and make sure "
            "it fixes the vulnerability without compromising the program's functionality."
        ),
        "gate": False,
        "stop_at_first_failed_case": False,
        "covered_by": "intent",
        "shows_fix": False,
        "fails_as_shipped": False,
        "options": None,
        "judge": exit_status_judge,
        "detail": default_detail,
    }


def test_the_module_provides_exactly_this_check(plugin: Any) -> None:
    assert plugin.provided() == [FUNCTIONAL]


def test_it_needs_the_intent_tests_to_register(plugin: Any) -> None:
    # covered_by names the intent tests' key: alone, the registry refuses it.
    registered = plugin.registered(ssebench.plugins.intent)
    assert [check.key for check in registered] == ["intent", "functional"]


def test_runs_at_levels_0_to_2(plugin: Any) -> None:
    assert plugin.levels() == [0, 1, 2]


def test_judged_by_exit_status(plugin: Any) -> None:
    outcome = plugin.run({"cases": ["true", "exit 1", "sleep 5"], "timeout": 0.3})
    assert outcome.status is Status.FAILED
    assert plugin.endings(outcome) == [
        (True, 0, None, False),
        (False, 1, None, False),
        (False, None, 15, True),
    ]
    assert FUNCTIONAL.detail(outcome) is None


def _functional(task, level: int):  # type: ignore[no-untyped-def]
    outcome = task.outcome(level).outcomes[-1]
    assert outcome.check is FUNCTIONAL
    return outcome


def test_covered_when_the_intent_tests_passed(ssebench_task) -> None:
    task = ssebench_task({"intent": "true", "functional": "exit 1"})
    outcome = _functional(task, 0)
    assert (outcome.status, outcome.cases, FUNCTIONAL.detail(outcome)) == (
        Status.PASSED,
        (),
        "covered by the intent tests",
    )


def test_run_when_the_intent_tests_failed(ssebench_task) -> None:
    task = ssebench_task({"intent": "exit 1", "functional": "exit 1"})
    outcome = _functional(task, 0)
    assert (outcome.status, len(outcome.cases), FUNCTIONAL.detail(outcome)) == (
        Status.FAILED,
        1,
        None,
    )


def test_run_when_the_task_has_no_intent_tests(ssebench_task) -> None:
    # A vacuous pass covers nothing.
    task = ssebench_task({"functional": "exit 1"})
    outcome = _functional(task, 0)
    assert (outcome.status, len(outcome.cases)) == (Status.FAILED, 1)


def test_run_when_the_level_withholds_the_intent_tests(ssebench_task) -> None:
    task = ssebench_task({"intent": "true", "functional": "true"})
    for level in (1, 2):
        outcome = _functional(task, level)
        assert (outcome.status, len(outcome.cases), FUNCTIONAL.detail(outcome)) == (
            Status.PASSED,
            1,
            None,
        )


def test_a_task_without_functional_tests_passes_with_none(ssebench_task) -> None:
    outcome = _functional(ssebench_task({"build": "true"}), 2)
    assert (outcome.status, FUNCTIONAL.detail(outcome)) == (Status.PASSED, "the task has none")


def test_not_run_when_the_build_failed(ssebench_task) -> None:
    outcome = _functional(ssebench_task({"build": "false", "functional": "true"}), 2)
    assert (outcome.status, FUNCTIONAL.detail(outcome)) == (Status.NOT_RUN, "the build failed")


def test_the_report_at_level_0_with_coverage(ssebench_task) -> None:
    task = ssebench_task(
        {"build": "true", "pocs": ["true", "true"], "intent": "true", "functional": "true"}
    )
    assert task.report(0) == (
        "test_patch result: every check passed.\n"
        "\n"
        "Checks:\n"
        "- build: passed\n"
        "- PoCs: passed (2 of 2)\n"
        "- intent tests: passed\n"
        "- functional tests: passed (covered by the intent tests)"
    )


def test_the_report_of_failed_functional_tests(ssebench_task) -> None:
    task = ssebench_task({"build": "true", "functional": "echo 'FAILED (failures=1)'; exit 1"})
    assert task.report(2) == (
        "test_patch result: FAILED. One or more functionality test(s) failed. Please reassess "
        "your patch and make sure it fixes the vulnerability without compromising the "
        "program's functionality.\n"
        "\n"
        "Checks:\n"
        "- build: passed\n"
        "- functional tests: FAILED\n"
        "\n"
        "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. "
        "Nothing is reported about them.\n"
        "\n"
        "Full log (functional tests):\n"
        "FAILED (failures=1)"
    )
