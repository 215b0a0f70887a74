"""The build check: its fields, its judge (exit 0 in time) and its details, run through the kit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ssebench.plugins.build
from ssebench.core import CaseRun, Status, default_detail, exit_status_judge
from ssebench.plugins.build import BUILD

MODULE = ssebench.plugins.build
CHECK = BUILD


def test_fields(plugin: Any) -> None:
    assert plugin.fields() == {
        "name": "build",
        "key": "build",
        "order": 10,
        "max_level": 3,
        "precedence": 1,
        "failure_reason": (
            "The project failed to build. Please reassess the correctness of your patch."
        ),
        "gate": True,
        "stop_at_first_failed_case": False,
        "covered_by": None,
        "shows_fix": False,
        "fails_as_shipped": False,
        "options": None,
        "judge": exit_status_judge,
        "detail": default_detail,
    }


def test_the_module_provides_exactly_this_check(plugin: Any) -> None:
    assert plugin.provided() == [BUILD]
    assert plugin.registered() == (BUILD,)


def test_runs_at_levels_0_to_3(plugin: Any) -> None:
    assert plugin.levels() == [0, 1, 2, 3]
    assert BUILD.runs_at(None)


def test_judge_alone(tmp_path: Path) -> None:
    def run(exit_code: int | None, signal: int | None = None, timed_out: bool = False) -> bool:
        return BUILD.judge(CaseRun(exit_code, signal, timed_out, 0.1, tmp_path / "no.log"))

    assert [run(0), run(1), run(2), run(None, 11), run(0, timed_out=True)] == [
        True,
        False,
        False,
        False,
        False,
    ]


def test_exit_0_passes(plugin: Any) -> None:
    outcome = plugin.run("echo compiling; exit 0")
    assert (outcome.status, outcome.passed_cases, outcome.total_cases) == (Status.PASSED, 1, 1)
    assert BUILD.detail(outcome) is None


def test_any_other_ending_fails(plugin: Any) -> None:
    outcome = plugin.run(
        {"cases": ["exit 1", "exit 2", "kill -SEGV $$", "sleep 5"], "timeout": 0.3}
    )
    assert outcome.status is Status.FAILED
    assert plugin.endings(outcome) == [
        (False, 1, None, False),
        (False, 2, None, False),
        (False, None, 11, False),
        (False, None, 15, True),
    ]
    assert BUILD.detail(outcome) is None


def test_exit_0_after_the_time_limit_fails(plugin: Any) -> None:
    # The shell turns our SIGTERM into exit 0: the run still ran out of time.
    outcome = plugin.run({"run": "trap 'exit 0' TERM; sleep 5 & wait", "timeout": 0.3})
    assert plugin.endings(outcome) == [(False, 0, None, True)]


def test_the_log_is_what_the_command_printed(ssebench_task) -> None:
    task = ssebench_task({"build": "echo out; echo err >&2; echo out2"})
    assert task.case_logs("build") == [b"out\nerr\nout2\n"]


def test_a_task_without_a_build_passes_with_none(ssebench_task) -> None:
    outcome = ssebench_task({"functional": "true"}).outcome(0)
    assert BUILD.detail(outcome.outcomes[0]) == "the task has none"
    assert outcome.outcomes[0].status is Status.PASSED


def test_a_failed_build_stops_every_later_check(ssebench_task) -> None:
    task = ssebench_task(
        {"build": "exit 1", "pocs": ["true"], "intent": "true", "functional": "true"}
    )
    outcome = task.outcome(0)
    assert [(o.check.name, o.status, o.check.detail(o)) for o in outcome.outcomes] == [
        ("build", Status.FAILED, None),
        ("PoCs", Status.NOT_RUN, "the build failed"),
        ("intent tests", Status.NOT_RUN, "the build failed"),
        ("functional tests", Status.NOT_RUN, "the build failed"),
    ]


def test_the_report_of_a_failed_build(ssebench_task) -> None:
    task = ssebench_task({"build": "echo 'cc: error: rle.c: no such file' >&2; exit 1"})
    assert task.report(2) == (
        "test_patch result: FAILED. The project failed to build. Please reassess the "
        "correctness of your patch.\n"
        "\n"
        "Checks:\n"
        "- build: FAILED\n"
        "- functional tests: not run (the build failed)\n"
        "\n"
        "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. "
        "Nothing is reported about them.\n"
        "\n"
        "Full log (build):\n"
        "cc: error: rle.c: no such file"
    )


def test_the_kit_writes_any_command_into_task_toml(ssebench_task) -> None:
    # Characters outside the BMP and DEL need care in a TOML string.
    task = ssebench_task({"build": "printf '%s\\n' '😀 naïve \x7f \"q\" \\\\'"})
    assert task.case_logs("build") == ['😀 naïve \x7f "q" \\\\\n'.encode()]
