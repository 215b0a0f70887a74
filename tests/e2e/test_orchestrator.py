"""The rules of test_patch across the five levels, checked on whole reports from real tasks.

`expected_report` is written from the spec alone (the run order, the build gate, the PoC stop,
intent-covers-functional, the precedence of failure reasons, the availability note), with the
texts copied from the spec; it shares no code with core/report.py or core/orchestrator.py.
Every command leaves a marker file, so each test also checks exactly which commands ran.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

# --- the spec, written out independently ---------------------------------------------------

LEVEL_NAMES = {
    0: "FULL_ASSISTANCE",
    1: "NO_INTENT_TEST",
    2: "NO_FUTURE_TEST",
    3: "BUILD_ONLY",
    4: "NO_BUILD",
}
ALL_CHECKS = ("build", "PoCs", "intent tests", "functional tests")
ENABLED = {
    0: ALL_CHECKS,
    1: ("build", "PoCs", "functional tests"),
    2: ("build", "functional tests"),
    3: ("build",),
    4: (),
}
REASONS = {
    "build": "The project failed to build. Please reassess the correctness of your patch.",
    "functional tests": (
        "One or more functionality test(s) failed. Please reassess your patch and make sure it "
        "fixes the vulnerability without compromising the program's functionality."
    ),
    "PoCs": (
        "At least one proof-of-concept (PoC) still triggers the vulnerability. Please reassess "
        "your patch and make sure it fixes the root cause of the vulnerability."
    ),
    "intent tests": (
        "One or more intent test(s) failed. These tests validate behavior after the "
        "vulnerability fix. Please reassess your patch to ensure it correctly addresses the "
        "vulnerability and aligns with common patterns in the project."
    ),
}
PRECEDENCE = ("build", "functional tests", "PoCs", "intent tests")
STOPPED = "stopped at the first that still triggers the bug"


def expected_report(
    level: int, lines: list[str], failed: str | None = None, log: str | None = None
) -> str:
    """The spec's result text: headline, Checks:, availability note, log."""
    withheld = [name for name in ALL_CHECKS if name not in ENABLED[level]]
    if failed is not None:
        headline = f"test_patch result: FAILED. {REASONS[failed]}"
    elif level == 4:
        headline = "test_patch result: no checks ran."
    elif withheld:
        headline = "test_patch result: every check that ran passed."
    else:
        headline = "test_patch result: every check passed."
    parts = [headline]
    if level != 4:
        parts.append("\n".join(["Checks:", *lines]))
    if withheld:
        note = (
            f"Not available at difficulty level {level} ({LEVEL_NAMES[level]}): "
            f"{', '.join(withheld)}. Nothing is reported about them."
        )
        if level == 4:
            note += (
                " test_patch has nothing to run at this level, so this result says nothing"
                " about your patch."
            )
        elif failed is None and "PoCs" in withheld:
            note += (
                " Without the PoCs, this result does not show whether the vulnerability is fixed."
            )
        parts.append(note)
    if failed is not None:
        parts.append(f"Full log ({failed}):\n{log}")
    return "\n\n".join(parts)


# --- tasks whose checks pass or fail as told ------------------------------------------------


def marked(name: str, command: str) -> str:
    # Unconfined (the kit's default), a case may write the task folder: the record of what ran
    # outlives the runner copy it ran on (the quote keeps task.toml's reference check away).
    return f'touch "$SSE_TASK_DIR"/ran.{name}; {command}'


def ran(task) -> set[str]:
    return {path.name.removeprefix("ran.") for path in task.path.glob("ran.*")}


BUILD_LOG = "cc -c rle.c\nrle.c:97: error: expected ';'"
INTENT_LOG = "intent: checking bounds\nFAIL: overrun accepted"
FUNCTIONAL_LOG = "functional: running\nFAIL: round trip"


def poc_log(i: int) -> str:
    return f"decoding crash-{i}.bin\n==7==ERROR: AddressSanitizer: heap-buffer-overflow (PoC {i})"


@dataclass(frozen=True)
class Scenario:
    """What each check of a tree does. pocs: True = that PoC no longer triggers; None = no table."""

    build: bool = True
    pocs: tuple[bool, ...] | None = (True, True)
    intent: bool | None = True
    functional: bool | None = True

    def table(self) -> dict[str, object]:
        checks: dict[str, object] = {}
        checks["build"] = marked(
            "build",
            "echo 'cc -c rle.c'"
            + ("" if self.build else "; echo \"rle.c:97: error: expected ';'\" >&2; exit 1"),
        )
        if self.pocs is not None:
            checks["pocs"] = [
                marked(
                    f"poc{i}",
                    f"echo 'decoding crash-{i}.bin'; "
                    + (
                        "echo 'rle: corrupt input' >&2; exit 2"  # a clean rejection: fixed
                        if fixed
                        else f"echo '==7==ERROR: AddressSanitizer: heap-buffer-overflow (PoC {i})'"
                        " >&2; exit 1"
                    ),
                )
                for i, fixed in enumerate(self.pocs, 1)
            ]
        if self.intent is not None:
            checks["intent"] = marked(
                "intent",
                "echo 'intent: checking bounds'"
                + ("" if self.intent else "; echo 'FAIL: overrun accepted' >&2; exit 1"),
            )
        if self.functional is not None:
            checks["functional"] = marked(
                "functional",
                "echo 'functional: running'"
                + ("" if self.functional else "; echo 'FAIL: round trip' >&2; exit 1"),
            )
        return checks

    def expect(self, level: int) -> tuple[str, set[str]]:
        """The report the spec asks for at `level`, and the commands that must have run."""
        lines: list[str] = []
        logs: dict[str, str] = {}
        runs: set[str] = set()
        build_failed = False
        intent_really_passed = False
        for name in ENABLED[level]:
            if build_failed:
                lines.append(f"- {name}: not run (the build failed)")
            elif name == "build":
                runs.add("build")
                lines.append("- build: passed" if self.build else "- build: FAILED")
                if not self.build:
                    build_failed = True
                    logs[name] = BUILD_LOG
            elif name == "PoCs":
                if self.pocs is None:
                    lines.append("- PoCs: passed (the task has none)")
                    continue
                total = len(self.pocs)
                passed = 0
                for i, fixed in enumerate(self.pocs, 1):
                    runs.add(f"poc{i}")
                    if not fixed:
                        logs[name] = poc_log(i)
                        break
                    passed += 1
                if name in logs:
                    lines.append(f"- PoCs: FAILED (passed {passed} of {total}; {STOPPED})")
                else:
                    lines.append(f"- PoCs: passed ({total} of {total})")
            elif name == "intent tests":
                if self.intent is None:
                    lines.append("- intent tests: passed (the task has none)")
                    continue
                runs.add("intent")
                intent_really_passed = self.intent
                lines.append("- intent tests: passed" if self.intent else "- intent tests: FAILED")
                if not self.intent:
                    logs[name] = INTENT_LOG
            elif intent_really_passed:
                lines.append("- functional tests: passed (covered by the intent tests)")
            elif self.functional is None:
                lines.append("- functional tests: passed (the task has none)")
            else:
                runs.add("functional")
                lines.append(
                    "- functional tests: passed"
                    if self.functional
                    else "- functional tests: FAILED"
                )
                if not self.functional:
                    logs[name] = FUNCTIONAL_LOG
        failed = next((name for name in PRECEDENCE if name in logs), None)
        log = logs[failed] if failed else None
        return expected_report(level, lines, failed, log), runs


SCENARIOS = {
    "all-pass": Scenario(),
    "build-fails-and-everything-else-would": Scenario(
        build=False, pocs=(False, False), intent=False, functional=False
    ),
    "build-fails-no-pocs": Scenario(build=False, pocs=None),
    "only-a-build": Scenario(pocs=None, intent=None, functional=None),
    "only-a-failing-build": Scenario(build=False, pocs=None, intent=None, functional=None),
    "first-of-3-pocs-triggers": Scenario(pocs=(False, True, True)),
    "middle-of-3-pocs-triggers": Scenario(pocs=(True, False, True)),
    "last-of-3-pocs-triggers": Scenario(pocs=(True, True, False)),
    "no-pocs": Scenario(pocs=None),
    "intent-fails-functional-passes": Scenario(intent=False),
    "intent-fails-functional-fails": Scenario(intent=False, functional=False),
    "functional-fails-but-covered": Scenario(functional=False),
    "no-intent-functional-fails": Scenario(intent=None, functional=False),
    "no-intent-functional-passes": Scenario(intent=None),
    "poc-and-functional-fail": Scenario(pocs=(True, False), functional=False),
    "poc-and-functional-fail-intent-fails": Scenario(
        pocs=(True, False), intent=False, functional=False
    ),
    "poc-and-intent-fail": Scenario(pocs=(False, True), intent=False),
}


@pytest.mark.parametrize("level", range(5))
@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_rules_at_every_level(ssebench_task, scenario: Scenario, level: int) -> None:
    task = ssebench_task(scenario.table())
    report, runs = scenario.expect(level)
    assert task.report(level) == report
    assert ran(task) == runs


# --- the same rules spelled out as literal reports ----------------------------------------


def test_build_failure_at_level_0_stops_everything(ssebench_task) -> None:
    task = ssebench_task(Scenario(build=False).table())
    assert task.report(0) == (
        "test_patch result: FAILED. The project failed to build. Please reassess the "
        "correctness of your patch.\n"
        "\n"
        "Checks:\n"
        "- build: FAILED\n"
        "- PoCs: not run (the build failed)\n"
        "- intent tests: not run (the build failed)\n"
        "- functional tests: not run (the build failed)\n"
        "\n"
        "Full log (build):\n"
        "cc -c rle.c\n"
        "rle.c:97: error: expected ';'"
    )
    assert ran(task) == {"build"}


def test_build_failure_at_level_3_lists_only_the_build(ssebench_task) -> None:
    task = ssebench_task(Scenario(build=False).table())
    assert task.report(3) == (
        "test_patch result: FAILED. The project failed to build. Please reassess the "
        "correctness of your patch.\n"
        "\n"
        "Checks:\n"
        "- build: FAILED\n"
        "\n"
        "Not available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, functional "
        "tests. Nothing is reported about them.\n"
        "\n"
        "Full log (build):\n"
        "cc -c rle.c\n"
        "rle.c:97: error: expected ';'"
    )


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        (
            0,
            "test_patch result: every check passed.\n\nChecks:\n- build: passed\n"
            "- PoCs: passed (the task has none)\n- intent tests: passed\n"
            "- functional tests: passed (covered by the intent tests)",
        ),
        (
            1,
            "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n"
            "- PoCs: passed (the task has none)\n- functional tests: passed\n\n"
            "Not available at difficulty level 1 (NO_INTENT_TEST): intent tests. Nothing is "
            "reported about them.",
        ),
    ],
)
def test_task_without_pocs_at_levels_0_and_1(ssebench_task, level: int, expected: str) -> None:
    # No "Without the PoCs" sentence: the PoC check ran, it just had nothing to run.
    task = ssebench_task(Scenario(pocs=None).table())
    assert task.report(level) == expected


def test_middle_poc_stops_the_step_and_later_pocs_do_not_run(ssebench_task) -> None:
    task = ssebench_task(Scenario(pocs=(True, False, True)).table())
    assert task.report(0) == (
        "test_patch result: FAILED. At least one proof-of-concept (PoC) still triggers the "
        "vulnerability. Please reassess your patch and make sure it fixes the root cause of the "
        "vulnerability.\n"
        "\n"
        "Checks:\n"
        "- build: passed\n"
        "- PoCs: FAILED (passed 1 of 3; stopped at the first that still triggers the bug)\n"
        "- intent tests: passed\n"
        "- functional tests: passed (covered by the intent tests)\n"
        "\n"
        "Full log (PoCs):\n"
        "decoding crash-2.bin\n"
        "==7==ERROR: AddressSanitizer: heap-buffer-overflow (PoC 2)"
    )
    assert not (task.path / "ran.poc3").exists()
    assert ran(task) == {"build", "poc1", "poc2", "intent"}


def test_covered_functional_tests_are_not_run_even_when_they_would_fail(ssebench_task) -> None:
    task = ssebench_task(Scenario(pocs=(True,), functional=False).table())
    assert task.report(0) == (
        "test_patch result: every check passed.\n\nChecks:\n- build: passed\n"
        "- PoCs: passed (1 of 1)\n- intent tests: passed\n"
        "- functional tests: passed (covered by the intent tests)"
    )
    assert not (task.path / "ran.functional").exists()


def test_intent_failure_with_functional_passing_runs_functional(ssebench_task) -> None:
    task = ssebench_task(Scenario(pocs=(True,), intent=False).table())
    assert task.report(0) == (
        "test_patch result: FAILED. One or more intent test(s) failed. These tests validate "
        "behavior after the vulnerability fix. Please reassess your patch to ensure it "
        "correctly addresses the vulnerability and aligns with common patterns in the "
        "project.\n\nChecks:\n- build: passed\n- PoCs: passed (1 of 1)\n"
        "- intent tests: FAILED\n- functional tests: passed\n\n"
        "Full log (intent tests):\nintent: checking bounds\nFAIL: overrun accepted"
    )
    assert (task.path / "ran.functional").exists()


def test_functional_failure_outranks_pocs_and_intent_and_shows_its_own_log(
    ssebench_task,
) -> None:
    task = ssebench_task(Scenario(pocs=(False,), intent=False, functional=False).table())
    assert task.report(0) == (
        "test_patch result: FAILED. One or more functionality test(s) failed. Please reassess "
        "your patch and make sure it fixes the vulnerability without compromising the "
        "program's functionality.\n\nChecks:\n- build: passed\n"
        "- PoCs: FAILED (passed 0 of 1; stopped at the first that still triggers the bug)\n"
        "- intent tests: FAILED\n- functional tests: FAILED\n\n"
        "Full log (functional tests):\nfunctional: running\nFAIL: round trip"
    )


# --- what the log section holds ------------------------------------------------------------

FUNCTIONAL_HEAD = (
    "test_patch result: FAILED. One or more functionality test(s) failed. Please reassess your "
    "patch and make sure it fixes the vulnerability without compromising the program's "
    "functionality.\n\nChecks:\n- build: passed\n- functional tests: FAILED\n\n"
    "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is "
    "reported about them.\n\nFull log (functional tests):\n"
)


@pytest.mark.parametrize(
    ("command", "log"),
    [
        # stdout and stderr interleaved in the order written
        (
            "echo out-1; echo err-1 >&2; echo out-2; echo err-2 >&2; exit 1",
            "out-1\nerr-1\nout-2\nerr-2",
        ),
        ("printf 'a\\n' >&2; sh -c 'printf \"b\\n\"'; printf 'c\\n' >&2; exit 1", "a\nb\nc"),
        # trailing line breaks dropped; leading and inner blank lines and trailing spaces kept
        ("printf 'FAIL\\n\\n\\n'; exit 1", "FAIL"),
        ("printf 'FAIL\\r\\n\\r\\n'; exit 1", "FAIL"),
        ("printf '\\nFAIL: a\\n\\n  FAIL: b  \\n\\n'; exit 1", "\nFAIL: a\n\n  FAIL: b  "),
        # bytes that are not UTF-8 are replaced
        ("printf 'bad \\377 byte\\n'; exit 1", "bad \ufffd byte"),
    ],
    ids=["interleaved", "interleaved-subprocess", "lf", "crlf", "inner", "utf8-replace"],
)
def test_log_section(ssebench_task, command: str, log: str) -> None:
    task = ssebench_task({"build": "true", "functional": command})
    assert task.report(2) == FUNCTIONAL_HEAD + log


# --- what counts as a PoC still triggering, and timeouts -----------------------------------

POC_HEAD = (
    "test_patch result: FAILED. At least one proof-of-concept (PoC) still triggers the "
    "vulnerability. Please reassess your patch and make sure it fixes the root cause of the "
    "vulnerability.\n\nChecks:\n- build: passed\n"
    "- PoCs: FAILED (passed 0 of 1; stopped at the first that still triggers the bug)\n"
    "- functional tests: passed (the task has none)\n\n"
    "Not available at difficulty level 1 (NO_INTENT_TEST): intent tests. Nothing is reported "
    "about them.\n\nFull log (PoCs):\n"
)
POC_PASSED = (
    "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n"
    "- PoCs: passed (1 of 1)\n- functional tests: passed (the task has none)\n\n"
    "Not available at difficulty level 1 (NO_INTENT_TEST): intent tests. Nothing is reported "
    "about them."
)


@pytest.mark.parametrize(
    ("poc", "log"),
    [
        (
            "echo '==1==ERROR: AddressSanitizer: heap-buffer-overflow' >&2",
            "==1==ERROR: AddressSanitizer: heap-buffer-overflow",
        ),
        (
            "echo 'rle.c:9:5: runtime error: signed integer overflow'",
            "rle.c:9:5: runtime error: signed integer overflow",
        ),
        ("echo crashing; kill -SEGV $$", "crashing"),
        ("echo aborting; kill -ABRT $$", "aborting"),
        ("echo segfault; exit 139", "segfault"),
        ("echo waiting; sleep 5", "waiting"),
    ],
    ids=["asan", "ubsan", "sigsegv", "sigabrt", "exit-139", "timeout"],
)
def test_poc_still_triggers(ssebench_task, poc: str, log: str) -> None:
    task = ssebench_task({"build": "true", "pocs": {"cases": [poc], "timeout": 0.5}})
    assert task.report(1) == POC_HEAD + log


@pytest.mark.parametrize(
    "poc", ["exit 0", "echo 'rle: corrupt input' >&2; exit 2", "exit 1", "kill -TERM $$"]
)
def test_poc_no_longer_triggers(ssebench_task, poc: str) -> None:
    task = ssebench_task({"build": "true", "pocs": {"cases": [poc], "timeout": 5}})
    assert task.report(1) == POC_PASSED


def test_poc_judged_by_the_tasks_triggered_if(ssebench_task) -> None:
    table = {
        "cases": ["echo 'Traceback (most recent call last):'; exit 1"],
        "triggered_if": {"exit_codes": [1]},
    }
    task = ssebench_task({"build": "true", "pocs": table})
    assert task.report(1) == POC_HEAD + "Traceback (most recent call last):"


@pytest.mark.parametrize("key", ["build", "functional"])
def test_timed_out_build_or_tests_fail(ssebench_task, key: str) -> None:
    slow = {"cases": ["echo started; sleep 5"], "timeout": 0.5}
    task = ssebench_task({"build": "true", key: slow})
    if key == "build":
        expected = (
            "test_patch result: FAILED. The project failed to build. Please reassess the "
            "correctness of your patch.\n\nChecks:\n- build: FAILED\n"
            "- functional tests: not run (the build failed)\n\n"
            "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing "
            "is reported about them.\n\nFull log (build):\nstarted"
        )
    else:
        expected = FUNCTIONAL_HEAD + "started"
    assert task.report(2) == expected


def test_withheld_checks_never_run(ssebench_task) -> None:
    # Every withheld command would fail loudly; none may run, and none may show.
    scenario = Scenario(pocs=(False, False), intent=False, functional=False)
    for level, runs in [(2, {"build", "functional"}), (3, {"build"}), (4, set())]:
        task = ssebench_task(scenario.table())
        assert task.report(level) == scenario.expect(level)[0]
        assert ran(task) == runs, level


def test_a_multi_case_check_shows_the_logs_of_all_its_failed_cases(ssebench_task) -> None:
    """The log of the failed check: every case that failed, in order; passing cases add nothing."""
    task = ssebench_task(
        {
            "build": "true",
            "functional": ["echo ok-1", "echo bad-1; exit 1", "echo ok-2", "echo bad-2; exit 1"],
        }
    )
    assert task.report(2) == FUNCTIONAL_HEAD + "bad-1\nbad-2"


def test_nothing_to_cover_is_reported_as_none(ssebench_task) -> None:
    """Passing intent tests cover functional tests only when the task has some."""
    task = ssebench_task({"build": "true", "pocs": ["true"], "intent": "true"})
    assert task.report(0) == (
        "test_patch result: every check passed.\n\n"
        "Checks:\n"
        "- build: passed\n"
        "- PoCs: passed (1 of 1)\n"
        "- intent tests: passed\n"
        "- functional tests: passed (the task has none)"
    )
