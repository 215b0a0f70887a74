"""A task's soundness from its cases' verdicts (evaluate/validation.py), on hand-made outcomes
(tests/e2e/test_validation.py runs the orchestrator's `every_case` on real cases)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ssebench.core.case import SANITIZER_EXITS, CaseRun
from ssebench.core.check import Check, CheckOutcome, Outcome, Status
from ssebench.evaluate.validation import judge_task, validation_json, validation_table
from ssebench.plugins.build import BUILD
from ssebench.plugins.functional import FUNCTIONAL
from ssebench.plugins.intent import INTENT
from ssebench.plugins.poc import POCS

CHECKS = (BUILD, POCS, INTENT, FUNCTIONAL)
# A run's verdicts: per check key, each case passed (True), failed (False) or not run (None).
SHIPPED = {"build": [True], "pocs": [False, False], "intent": [False], "functional": [True]}
FIXED = {"build": [True], "pocs": [True, True], "intent": [True], "functional": [True]}


def outcome(verdicts: dict[str, Sequence[bool | None]]) -> Outcome:
    checked = []
    for check in CHECKS:
        cases = verdicts.get(check.key, [])
        runs = tuple(
            CaseRun(0, None, False, 0.1, key=check.key, index=i, passed=passed)
            for i, passed in enumerate(cases)
            if passed is not None
        )
        status = Status.FAILED if not all(c.passed for c in runs) else Status.PASSED
        checked.append(CheckOutcome(check, status, len(cases), runs))
    return Outcome(None, tuple(checked), ())


def changed(base: dict[str, list[bool]], **keys: list[bool | None]) -> dict[str, list]:
    return {**base, **keys}


def test_a_sound_task_over_two_runs() -> None:
    validation = judge_task([outcome(SHIPPED)] * 2, [outcome(FIXED)] * 2)
    assert validation.sound
    assert validation_table(validation) == (
        "ssebench validate: 2 runs on each tree\n"
        "\n"
        "check             as shipped  with the fix\n"
        "build             passed      passed\n"
        "PoCs case 0       FAILED      passed\n"
        "PoCs case 1       FAILED      passed\n"
        "intent tests      FAILED      passed\n"
        "functional tests  passed      passed\n"
        "\n"
        "The task is sound."
    )


def test_a_poc_that_never_triggers_is_named() -> None:
    shipped = outcome(changed(SHIPPED, pocs=[False, True]))
    validation = judge_task([shipped], [outcome(FIXED)])
    assert not validation.sound
    assert validation.problems == (
        "PoCs case 1: passed as shipped; it must fail there (show the bug)",
    )


def test_a_fix_that_fails_a_functional_test() -> None:
    fixed = outcome(changed(FIXED, functional=[False]))
    validation = judge_task([outcome(SHIPPED)], [fixed])
    assert validation.problems == (
        "functional tests: FAILED with the fix; every check must pass with it",
    )


def test_the_build_and_tests_must_pass_as_shipped() -> None:
    shipped = outcome(changed(SHIPPED, functional=[False]))
    assert judge_task([shipped], [outcome(FIXED)]).problems == (
        "functional tests: FAILED as shipped; it must pass there",
    )
    # A failed build stops every later check: the build alone is named, not what it blocked.
    blocked = outcome(
        {"build": [False], "pocs": [None, None], "intent": [None], "functional": [None]}
    )
    validation = judge_task([blocked], [outcome(FIXED)])
    assert validation.problems == ("build: FAILED as shipped; it must pass there",)


def test_a_case_that_changes_its_verdict_is_flaky() -> None:
    second = outcome(changed(SHIPPED, functional=[False]))
    validation = judge_task([outcome(SHIPPED), second], [outcome(FIXED)] * 2)
    assert not validation.sound
    assert validation.problems == ()  # flaky, not wrong: named once, as flaky
    assert validation.flaky == ("functional tests: flaky as shipped (passed 1 of 2 runs)",)
    assert "functional tests  flaky (1 of 2 passed)  passed" in validation_table(validation)


def test_intent_tests_passing_as_shipped_are_a_warning_only() -> None:
    validation = judge_task([outcome(changed(SHIPPED, intent=[True]))], [outcome(FIXED)])
    assert validation.sound
    assert validation.warnings == (
        "intent tests: passed as shipped; they should fail without the fix",
    )


def test_a_fix_that_does_not_apply() -> None:
    validation = judge_task([outcome(SHIPPED)], [], "patch failed: rle.c:88")
    assert validation_json(validation) == {
        "sound": False,
        "runs": 1,
        "fix": {"applied": False, "error": "patch failed: rle.c:88"},
        "problems": ["the fix does not apply: patch failed: rle.c:88"],
        "flaky": [],
        "warnings": [],
        "cases": [
            {"check": "build", "name": "build", "index": 0, "as_shipped": [True], "with_fix": []},
            {"check": "pocs", "name": "PoCs", "index": 0, "as_shipped": [False], "with_fix": []},
            {"check": "pocs", "name": "PoCs", "index": 1, "as_shipped": [False], "with_fix": []},
            {
                "check": "intent",
                "name": "intent tests",
                "index": 0,
                "as_shipped": [False],
                "with_fix": [],
            },
            {
                "check": "functional",
                "name": "functional tests",
                "index": 0,
                "as_shipped": [True],
                "with_fix": [],
            },
        ],
    }


def test_a_task_without_pocs_is_a_warning() -> None:
    shipped = outcome(changed(SHIPPED, pocs=[]))
    validation = judge_task([shipped], [outcome(changed(FIXED, pocs=[]))])
    assert validation.sound
    assert validation.warnings == ("the task has no PoCs: nothing shows the bug",)


def test_checks_are_known_by_their_fields_not_their_names() -> None:
    # A third-party check that shows the fix is held to the PoCs' rule.
    proofs = Check(name="proofs", key="pocs", order=20, max_level=1, precedence=3, shows_fix=True)
    shipped = outcome(changed(SHIPPED, pocs=[True, False]))
    renamed = Outcome(
        None,
        tuple(
            CheckOutcome(proofs, o.status, o.total_cases, o.cases) if o.check is POCS else o
            for o in shipped.outcomes
        ),
        (),
    )
    problems = judge_task([renamed], [outcome(FIXED)]).problems
    assert problems == ("proofs case 0: passed as shipped; it must fail there (show the bug)",)


def ended(outcome_: Outcome, key: str, **ends: tuple[int | None, int | None, bool]) -> Outcome:
    """`outcome_` with its `key` cases ended as `ends` say: case_N=(exit code, signal, timed
    out)."""
    checked = []
    for o in outcome_.outcomes:
        if o.check.key == key:
            o = CheckOutcome(o.check, o.status, o.total_cases, tuple(
                replace(case, exit_code=ends[f"case_{case.index}"][0],
                        signal=ends[f"case_{case.index}"][1],
                        timed_out=ends[f"case_{case.index}"][2])
                if f"case_{case.index}" in ends else case
                for case in o.cases
            ))  # fmt: skip
        checked.append(o)
    return Outcome(None, tuple(checked), ())


def test_a_poc_ending_the_same_way_on_both_trees_is_named_a_set_up_problem() -> None:
    """A Go PoC that cannot build (its go.mod missing) exits 1 as shipped and with the fix."""
    fixed = outcome(changed(FIXED, pocs=[False, False], intent=[False]))
    runs = (
        [ended(outcome(SHIPPED), "pocs", case_0=(1, None, False), case_1=(2, None, False))] * 2,
        [ended(fixed, "pocs", case_0=(1, None, False), case_1=(1, None, False))] * 2,
    )
    assert judge_task(*runs).problems == (
        "PoCs case 0: FAILED with the fix, ending as it did as shipped (exit status 1, every "
        "run): it may never reach the bug, a set-up problem (it cannot build, or find its files: "
        "--logs DIR keeps its log), unless the fix does not fix it",
        "PoCs case 1: FAILED with the fix; every check must pass with it",  # 2, then 1
        "intent tests: FAILED with the fix; every check must pass with it",  # no PoC: no rule
    )
    for end, shown in [((None, 11, False), "signal 11"), ((None, 15, True), "timed out")]:
        runs = (
            [ended(outcome(SHIPPED), "pocs", case_0=end)],
            [ended(outcome(changed(FIXED, pocs=[False, True])), "pocs", case_0=end)],
        )
        assert f"as shipped ({shown}, every run)" in judge_task(*runs).problems[0]


def test_a_sanitizers_status_is_alike_by_chance_only() -> None:
    """Each case's sanitizers get an N of their own: two alike tell nothing of the PoC."""
    runs = (
        [ended(outcome(SHIPPED), "pocs", case_0=(SANITIZER_EXITS[3], None, False))],
        [ended(outcome(changed(FIXED, pocs=[False, True])), "pocs",
               case_0=(SANITIZER_EXITS[3], None, False))],
    )  # fmt: skip
    assert judge_task(*runs).problems == (
        "PoCs case 0: FAILED with the fix; every check must pass with it",
    )
    runs = (runs[0] * 2, [runs[1][0], ended(runs[1][0], "pocs", case_0=(1, None, False))])
    assert judge_task(*runs).problems == (
        "PoCs case 0: FAILED with the fix; every check must pass with it",
    )
