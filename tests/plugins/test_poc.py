"""The PoCs: their fields, the judge (does the bug still trigger?) and the details, run for real
through the kit, down to a C program with a real heap overflow under AddressSanitizer."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import ssebench.plugins.poc
from ssebench.core import CaseRun, CheckOutcome, Status
from ssebench.core.case import _SCAN_CHUNK
from ssebench.core.errors import ConfigError
from ssebench.daemon.sanitizers import EXIT_CODES
from ssebench.plugins.build import BUILD
from ssebench.plugins.intent import INTENT
from ssebench.plugins.poc import POCS, PocOptions, TriggeredIf, detail, judge

MODULE = ssebench.plugins.poc
CHECK = POCS

ASAN = "==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000018"
SANITIZER_REPORTS = {
    "asan": ASAN,
    "ubsan": "x.c:3:5: runtime error: signed integer overflow: 2147483647 + 1",
    "msan": "==7==WARNING: MemorySanitizer: use-of-uninitialized-value",
    "tsan": "WARNING: ThreadSanitizer: data race (pid=9)",
    "lsan": "==5==ERROR: LeakSanitizer: detected memory leaks",
    "hwasan": "==3==ERROR: HWAddressSanitizer: tag-mismatch on address 0x0042",
    # SEC-bench's six besides: ERROR: AddressSanitizer:, WARNING: MemorySanitizer: and
    # ERROR: LeakSanitizer: are above.
    "msan-error": "==7==ERROR: MemorySanitizer: requested allocation size 0x100000000000",
    "ubsan-deadly": "UndefinedBehaviorSanitizer:DEADLYSIGNAL",
    "ubsan-summary": "SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior x.c:3:5 in main",
}


def pocs(plugin: Any, cases: list[str], files: Any = None, **table: Any) -> tuple[Any, list[Any]]:
    """Run the PoCs alone; one (passed, exit code, signal, timed out) tuple per case run."""
    outcome = plugin.run({"cases": cases, **table}, files=files)
    return outcome, plugin.endings(outcome)


def triggers(plugin: Any, command: str, **table: Any) -> bool:
    """Whether one PoC command still triggers the bug, judged by the real daemon."""
    outcome, _ = pocs(plugin, [command], **table)
    assert len(outcome.cases) == 1
    return not outcome.cases[0].passed


# --- fields ----------------------------------------------------------------------------------


def test_fields(plugin: Any) -> None:
    assert plugin.fields() == {
        "name": "PoCs",
        "key": "pocs",
        "order": 20,
        "max_level": 1,
        "precedence": 3,
        "failure_reason": (
            "At least one proof-of-concept (PoC) still triggers the vulnerability. Please "
            "reassess your patch and make sure it fixes the root cause of the vulnerability."
        ),
        "gate": False,
        "stop_at_first_failed_case": True,
        "covered_by": None,
        "shows_fix": True,
        "fails_as_shipped": False,
        "options": PocOptions,
        "judge": judge,
        "detail": detail,
    }


def test_the_module_provides_exactly_this_check(plugin: Any) -> None:
    assert plugin.provided() == [POCS]
    assert plugin.registered() == (POCS,)


def test_runs_at_levels_0_and_1(plugin: Any) -> None:
    assert plugin.levels() == [0, 1]


def test_the_default_rule() -> None:
    assert PocOptions().model_dump() == {
        "triggered_if": {
            "sanitizer": True,
            "signal": True,
            "timeout": True,
            "exit_codes": (),
            "passing_exit_codes": None,
            "output_regex": "",
        }
    }


# --- the default rule, run for real ------------------------------------------------------------


@pytest.mark.parametrize("report", SANITIZER_REPORTS.values(), ids=SANITIZER_REPORTS.keys())
def test_a_sanitizer_report_triggers(plugin: Any, report: str) -> None:
    assert triggers(plugin, f"echo starting; echo '{report}' >&2; exit 0")


@pytest.mark.parametrize(
    "output",
    [
        "all good",
        "WARNING: AddressSanitizer failed to allocate 0x10 bytes",
        "AddressSanitizer is not enabled in this build",
        "this is a runtime error without a colon",
        "ERROR: Address Sanitizer",
    ],
)
def test_output_without_a_report_passes(plugin: Any, output: str) -> None:
    assert not triggers(plugin, f"echo '{output}'")


@pytest.mark.parametrize("signal", ["SEGV", "ABRT", "BUS", "FPE", "ILL"])
def test_a_fatal_signal_triggers(plugin: Any, signal: str) -> None:
    _, cases = pocs(plugin, [f"kill -{signal} $$"])
    number = {"SEGV": 11, "ABRT": 6, "BUS": 7, "FPE": 8, "ILL": 4}[signal]
    assert cases == [(False, None, number, False)]


@pytest.mark.parametrize("status", [139, 134, 135, 136, 132])
def test_a_shell_status_for_a_fatal_signal_reads_as_the_signal_and_triggers(
    plugin: Any, status: int
) -> None:
    _, cases = pocs(plugin, [f"exit {status}"])
    assert cases == [(False, None, status - 128, False)]


def test_a_child_killed_by_a_fatal_signal_triggers(plugin: Any) -> None:
    # bash reports the child's death as 128+N and carries on: the PoC's own last command.
    _, cases = pocs(plugin, ["bash -c 'kill -SEGV $$'; echo after"])
    assert cases == [(True, 0, None, False)]
    _, cases = pocs(plugin, ["bash -c 'kill -SEGV $$'; exit $?"])
    assert cases == [(False, None, 11, False)]


def test_exit_codes_name_a_signal_as_the_shell_status(plugin: Any) -> None:
    # With signals not counted, `exit_codes = [143]` still names death by SIGTERM.
    rule = {"triggered_if": {"signal": False, "exit_codes": [143]}}
    _, cases = pocs(plugin, ["kill -TERM $$", "exit 143", "kill -SEGV $$"], **rule)
    assert cases == [(False, None, 15, False)]


@pytest.mark.parametrize(
    ("command", "ending"),
    [
        ("kill -TERM $$", (True, None, 15, False)),
        ("kill -KILL $$", (True, None, 9, False)),
        ("exit 143", (True, None, 15, False)),  # read as the signal, as bubblewrap must
        ("exit 1", (True, 1, None, False)),
        ("exit 2", (True, 2, None, False)),
        ("exit 0", (True, 0, None, False)),
    ],
)
def test_other_endings_pass(plugin: Any, command: str, ending: tuple[Any, ...]) -> None:
    _, cases = pocs(plugin, [command])
    assert cases == [ending]


def test_a_timeout_triggers(plugin: Any) -> None:
    _, cases = pocs(plugin, ["sleep 5"], timeout=0.3)
    assert cases == [(False, None, 15, True)]


# --- triggered_if narrows and widens -----------------------------------------------------------


def test_sanitizer_false_ignores_a_report(plugin: Any) -> None:
    command = f"echo '{ASAN}'; exit 1"
    assert not triggers(plugin, command, triggered_if={"sanitizer": False})
    assert triggers(plugin, command, triggered_if={"sanitizer": True})


def test_signal_false_ignores_fatal_signals(plugin: Any) -> None:
    rule = {"triggered_if": {"signal": False}}
    _, cases = pocs(plugin, ["kill -SEGV $$", "exit 139", f"echo '{ASAN}'"], **rule)
    assert cases == [(True, None, 11, False), (True, None, 11, False), (False, 0, None, False)]


def test_timeout_false_ignores_a_hang(plugin: Any) -> None:
    assert not triggers(plugin, "sleep 5", timeout=0.3, triggered_if={"timeout": False})


def test_timeout_false_still_reads_what_a_hung_run_printed(plugin: Any) -> None:
    command = f"echo '{ASAN}'; sleep 5"
    assert triggers(plugin, command, timeout=0.3, triggered_if={"timeout": False})


def test_timeout_false_ignores_the_signal_we_stopped_it_with(plugin: Any) -> None:
    # A PoC that aborts when told to stop did not crash on its own: the kill was ours.
    command = "trap 'kill -ABRT $$' TERM; sleep 5 & wait"
    rule = {"timeout": 0.3, "triggered_if": {"timeout": False, "exit_codes": [143]}}
    assert not triggers(plugin, command, **rule)


def test_exit_codes_widen(plugin: Any) -> None:
    rule = {"triggered_if": {"exit_codes": [1, 3]}}
    _, cases = pocs(plugin, ["exit 0", "exit 2", "exit 3", "exit 1"], **rule)
    assert cases == [
        (True, 0, None, False),
        (True, 2, None, False),
        (False, 3, None, False),
    ]


def test_passing_exit_codes_judge_by_exit_status_alone(plugin: Any) -> None:
    """Upstream ssebench's run.sh and SEC-bench's `exit_code`: any other status triggers, a
    signal's (as 128+N) and a sanitizer report's exit status included."""
    rule = {"triggered_if": {"sanitizer": False, "passing_exit_codes": [2]}}
    commands = ["exit 2", "exit 0", "exit 1", "kill -SEGV $$", f"echo '{ASAN}'; exit 2"]
    _, cases = pocs(plugin, commands, **rule)
    assert cases == [(True, 2, None, False), (False, 0, None, False)]
    _, cases = pocs(plugin, commands[2:], **rule)
    assert cases == [(False, 1, None, False)]
    _, cases = pocs(plugin, commands[3:], **rule)
    assert cases == [(False, None, 11, False)]
    _, cases = pocs(plugin, commands[4:], **rule)
    assert cases == [(True, 2, None, False)]  # the report is not looked for: sanitizer = false


def test_passing_exit_codes_leave_a_timeout_to_its_own_key(plugin: Any) -> None:
    rule = {"triggered_if": {"timeout": False, "passing_exit_codes": [0]}}
    assert not triggers(plugin, "sleep 5", timeout=0.3, **rule)
    assert triggers(plugin, "sleep 5", timeout=0.3, triggered_if={"passing_exit_codes": [0]})


def test_output_regex_widens(plugin: Any) -> None:
    rule = {"triggered_if": {"output_regex": r"Traceback \(most recent call last\)"}}
    traceback = "echo 'Traceback (most recent call last):'; echo '  File x'; exit 0"
    assert triggers(plugin, traceback, **rule)
    assert not triggers(plugin, "echo 'Traceback: none'", **rule)


def test_output_regex_reads_the_output_not_the_command(plugin: Any) -> None:
    rule = {"triggered_if": {"output_regex": "needle"}}
    assert not triggers(plugin, "true needle", **rule)
    assert triggers(plugin, "printf 'nee%s' dle", **rule)


def test_output_regex_is_bytes_and_multiline_flags_work(plugin: Any) -> None:
    rule = {"triggered_if": {"output_regex": r"(?m)^FATAL \d+$"}}
    assert triggers(plugin, "printf 'ok\\nFATAL 42\\nok\\n'", **rule)
    assert not triggers(plugin, "printf 'not FATAL 42\\n'", **rule)


@pytest.mark.parametrize(
    ("triggered_if", "problem"),
    [
        ({"sanitiser": False}, "triggered_if.sanitiser: unknown key"),
        ({"signal": 0}, "triggered_if.signal: must be true or false (got 0)"),
        ({"exit_codes": [True]}, "triggered_if.exit_codes.0: must be a whole number (got True)"),
        ({"exit_codes": ["1"]}, "triggered_if.exit_codes.0: must be a whole number (got '1')"),
        (
            {"exit_codes": [256]},
            "triggered_if.exit_codes.0: must be at most 255 (got 256)",
        ),
        (
            {"output_regex": "(unclosed"},
            "triggered_if.output_regex: not a regular expression: "
            "missing ), unterminated subpattern at position 0",
        ),
        (
            {"output_regex": "(?u)x"},
            "triggered_if.output_regex: not a regular expression: "
            "bad inline flags: cannot use 'u' flag with a bytes pattern at position 3",
        ),
    ],
    ids=["unknown-key", "int-for-bool", "bool-for-int", "str-for-int", "too-big", "bad", "unicode"],
)
def test_a_bad_rule_is_a_task_error(
    ssebench_task, triggered_if: dict[str, Any], problem: str
) -> None:
    task = ssebench_task({"pocs": {"run": "true", "triggered_if": triggered_if}})
    with pytest.raises(ConfigError) as caught:
        task.run_check("pocs")
    assert str(caught.value) == f"{task.path / 'task.toml'}: checks.pocs.{problem}"


# --- a rule of one case ----------------------------------------------------------------------


def test_a_case_may_have_its_own_rule(plugin: Any) -> None:
    """A real CVE task mixes PoCs: ASan crashes, and a script whose bug shows as exit status 3.
    A case given as a table takes its own `triggered_if`, which replaces the table's."""
    cases = [
        "echo clean; exit 3",  # the table's rule: status 3 means nothing
        {"run": "echo clean; exit 3", "triggered_if": {"exit_codes": [3]}},
        {"run": f"echo '{ASAN}'", "triggered_if": {"sanitizer": False}},
    ]
    _, endings = pocs(plugin, cases, triggered_if={"exit_codes": [4]})
    assert endings == [(True, 3, None, False), (False, 3, None, False)]
    later = [cases[0], cases[2]]  # the third's own rule ignores sanitizers: it no longer triggers
    assert pocs(plugin, later)[1] == [(True, 3, None, False), (True, 0, None, False)]


@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ({"triggered_if": {"exit_codes": [3]}}, "cases.0: a case given as a table needs `run`"),
        ({"run": "true", "timeout": 5}, "cases.0.timeout: unknown key"),
        ({"run": "true", "triggered_if": {"exit_codes": ["3"]}},
         "cases.0.triggered_if.exit_codes.0: must be a whole number (got '3')"),
        ({"run": ""}, "cases: every command must be a non-empty string"),
    ],
    ids=["no-run", "unknown-key", "bad-rule", "empty"],
)  # fmt: skip
def test_a_bad_case_table_is_a_task_error(
    ssebench_task: Any, case: dict[str, Any], problem: str
) -> None:
    task = ssebench_task({"pocs": {"cases": [case]}})
    with pytest.raises(ConfigError) as caught:
        task.run_check("pocs")
    assert str(caught.value) == f"{task.path / 'task.toml'}: checks.pocs.{problem}"


def test_a_check_without_options_takes_no_case_options(ssebench_task: Any) -> None:
    task = ssebench_task({"build": {"cases": [{"run": "true", "triggered_if": {}}]}})
    with pytest.raises(ConfigError) as caught:
        task.run_check("build")
    assert str(caught.value) == (
        f"{task.path / 'task.toml'}: checks.build.cases.0.triggered_if: unknown key"
    )


# --- big logs --------------------------------------------------------------------------------


def test_a_report_after_5_mb_of_output_is_found(plugin: Any) -> None:
    filler = "head -c 5000000 /dev/zero | tr '\\0' x; echo"
    assert triggers(plugin, f"{filler}; echo '{ASAN}'")
    assert not triggers(plugin, f"{filler}; echo 'clean exit'")


@pytest.mark.parametrize(
    "start",
    [_SCAN_CHUNK - 10, _SCAN_CHUNK - 1, _SCAN_CHUNK, 2 * _SCAN_CHUNK - 20, 3 * _SCAN_CHUNK - 5],
    ids=["1MiB-10", "1MiB-1", "1MiB", "2MiB-20", "3MiB-5"],
)
def test_a_report_across_a_chunk_boundary_is_found(plugin: Any, start: int) -> None:
    log = b"x" * start + ASAN.encode() + b"\n" + b"y" * 1000
    assert triggers(plugin, "cat out.log", files={"out.log": log})


def test_log_search_across_a_boundary_alone(tmp_path: Path) -> None:
    log = tmp_path / "case.log"
    log.write_bytes(b"x" * (_SCAN_CHUNK - 7) + ASAN.encode())
    run = CaseRun(exit_code=0, signal=None, timed_out=False, seconds=0.1, log_path=log)
    assert judge(run) is False
    log.write_bytes(b"x" * (_SCAN_CHUNK - 7) + ASAN.encode().replace(b"Address", b"Adress"))
    assert judge(run) is True


def test_the_judge_alone_with_options(tmp_path: Path) -> None:
    log = tmp_path / "case.log"
    log.write_bytes(b"boom\n")

    def run(exit_code: int | None, killed_by: int | None, timed_out: bool, **rule: Any) -> bool:
        options = PocOptions(triggered_if=TriggeredIf(**rule)) if rule else None
        return judge(CaseRun(exit_code, killed_by, timed_out, 0.1, log, options))

    assert run(0, None, False) is True
    assert run(None, 11, False) is False
    assert run(None, 11, False, signal=False) is True
    assert run(None, None, True) is False
    assert run(None, 15, True, timeout=False) is True
    assert run(0, None, False, output_regex="bo+m") is False
    assert run(7, None, False, exit_codes=(7,)) is False
    assert run(None, 6, False, signal=False, exit_codes=(134,)) is False


def test_the_status_its_sanitizers_were_told_triggers(tmp_path: Path) -> None:
    """A case whose sanitizers were told to end it with N (daemon/sanitizers.py) and that ended
    with N still triggers, whatever its log says: its report may have been taken away."""
    log = tmp_path / "case.log"
    log.write_bytes(b"")

    def run(exit_code: int | None, told: int | None, timed_out: bool = False, **rule: Any) -> bool:
        options = PocOptions(triggered_if=TriggeredIf(**rule)) if rule else None
        case = CaseRun(exit_code, None, timed_out, 0.1, log, options, sanitizer_exit=told)
        return judge(case)

    assert run(97, 97) is False
    assert run(97, None) is True  # the task set `exitcode` itself: N was never told
    assert run(97, 98) is True
    assert run(0, 97) is True
    assert run(97, 97, sanitizer=False) is True  # no sanitizer counts: neither does N
    assert run(97, 97, passing_exit_codes=(97,)) is False
    assert run(97, 97, timed_out=True, timeout=False) is True  # we ended it: its status is ours


def test_a_regex_that_only_bytes_cannot_compile_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        TriggeredIf(output_regex="(?u)x")
    assert [error["msg"] for error in caught.value.errors()] == [
        "Value error, not a regular expression: bad inline flags: cannot use 'u' flag with a "
        "bytes pattern at position 3"
    ]


# --- detail ----------------------------------------------------------------------------------


def _case(index: int, passed: bool) -> CaseRun:
    exit_code, signal = (0, None) if passed else (None, 11)
    return CaseRun(exit_code, signal, False, 0.1, index=index, passed=passed, log_id=f"log{index}")


@pytest.mark.parametrize(
    ("outcome", "text"),
    [
        (CheckOutcome(POCS, Status.PASSED, 2, (_case(0, True), _case(1, True))), "2 of 2"),
        (
            CheckOutcome(POCS, Status.FAILED, 3, (_case(0, True), _case(1, False))),
            "passed 1 of 3; stopped at the first that still triggers the bug",
        ),
        (
            CheckOutcome(POCS, Status.FAILED, 2, (_case(0, False),)),
            "passed 0 of 2; stopped at the first that still triggers the bug",
        ),
        (CheckOutcome(POCS, Status.PASSED, 0), "the task has none"),
        (CheckOutcome(POCS, Status.NOT_RUN, 2, blocked_by=BUILD), "the build failed"),
        (CheckOutcome(POCS, Status.NOT_RUN, unsupported=True), "this daemon cannot run it"),
        (CheckOutcome(POCS, Status.PASSED, 0, covered_by=INTENT), "covered by the intent tests"),
    ],
    ids=["all-passed", "stopped", "first-failed", "none", "blocked", "unsupported", "covered"],
)
def test_detail_alone(outcome: CheckOutcome, text: str) -> None:
    assert detail(outcome) == text


def test_two_of_two(plugin: Any) -> None:
    outcome, cases = pocs(plugin, ["true", "exit 1"])
    assert (outcome.status, detail(outcome)) == (Status.PASSED, "2 of 2")
    assert cases == [(True, 0, None, False), (True, 1, None, False)]


def test_stops_at_the_first_that_still_triggers(plugin: Any) -> None:
    outcome, cases = pocs(plugin, ["true", "kill -SEGV $$", "true"])
    assert (outcome.status, outcome.total_cases, detail(outcome)) == (
        Status.FAILED,
        3,
        "passed 1 of 3; stopped at the first that still triggers the bug",
    )
    assert cases == [(True, 0, None, False), (False, None, 11, False)]


def test_the_log_is_the_one_of_the_poc_that_still_triggers(ssebench_task) -> None:
    task = ssebench_task({"pocs": ["echo fine", f"echo '{ASAN}'; exit 1", "echo never"]})
    assert task.case_logs("pocs") == [b"fine\n", f"{ASAN}\n".encode()]


def test_a_task_without_pocs(ssebench_task) -> None:
    outcome = ssebench_task({"build": "true"}).outcome(0).outcomes[1]
    assert (outcome.check, outcome.status, detail(outcome)) == (
        POCS,
        Status.PASSED,
        "the task has none",
    )


def test_not_run_when_the_build_failed(ssebench_task) -> None:
    outcome = ssebench_task({"build": "false", "pocs": ["true"]}).outcome(0).outcomes[1]
    assert (outcome.check, outcome.status, detail(outcome)) == (
        POCS,
        Status.NOT_RUN,
        "the build failed",
    )


def test_the_report_of_a_poc_that_still_triggers(ssebench_task) -> None:
    task = ssebench_task({"build": "true", "pocs": ["true", f"echo '{ASAN}'; exit 1"]})
    assert task.report(1) == (
        "test_patch result: FAILED. At least one proof-of-concept (PoC) still triggers the "
        "vulnerability. Please reassess your patch and make sure it fixes the root cause of the "
        "vulnerability.\n"
        "\n"
        "Checks:\n"
        "- build: passed\n"
        "- PoCs: FAILED (passed 1 of 2; stopped at the first that still triggers the bug)\n"
        "- functional tests: passed (the task has none)\n"
        "\n"
        "Not available at difficulty level 1 (NO_INTENT_TEST): intent tests. "
        "Nothing is reported about them.\n"
        "\n"
        "Full log (PoCs):\n"
        f"{ASAN}"
    )


# --- a real C program ------------------------------------------------------------------------

OVERFLOW_C = """\
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    size_t size = strlen(argv[1]);
    char *copy = malloc(size);
    strcpy(copy, argv[1]);
    free(copy);
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_a_real_heap_overflow_under_asan(ssebench_task) -> None:
    checks = {
        "build": "gcc -fsanitize=address -g -o copy copy.c",
        "pocs": ["./copy hello"],
    }
    broken = ssebench_task(checks, files={"copy.c": OVERFLOW_C})
    fixed = ssebench_task(
        checks, files={"copy.c": OVERFLOW_C.replace("malloc(size)", "malloc(size + 1)")}
    )

    outcome = broken.outcome(0)
    assert [(o.check.name, o.status, o.check.detail(o)) for o in outcome.outcomes[:2]] == [
        ("build", Status.PASSED, None),
        ("PoCs", Status.FAILED, "passed 0 of 1; stopped at the first that still triggers the bug"),
    ]
    (crash,) = outcome.outcomes[1].cases
    # ASan's status is the case's own N (daemon/sanitizers.py), not its default of 1.
    assert (crash.exit_code in EXIT_CODES, crash.signal, crash.timed_out) == (True, None, False)
    log = broken.case_logs("pocs")[0].decode()
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in log
    assert "SUMMARY: AddressSanitizer: heap-buffer-overflow" in log

    outcome = fixed.outcome(0)
    assert [(o.check.name, o.status, o.check.detail(o)) for o in outcome.outcomes[:2]] == [
        ("build", Status.PASSED, None),
        ("PoCs", Status.PASSED, "1 of 1"),
    ]
    assert fixed.case_logs("pocs") == [b""]


@pytest.mark.parametrize("pad", [0, 5, _SCAN_CHUNK - 3, _SCAN_CHUNK + 7, 5 * _SCAN_CHUNK])
def test_log_search_anchors_mean_line_starts_and_ends(tmp_path: Path, pad: int) -> None:
    """`^` and `$` in an output_regex match at real line boundaries, wherever chunks fall."""
    log = tmp_path / "case.log"
    run = CaseRun(exit_code=0, signal=None, timed_out=False, seconds=0.1, log_path=log)
    anchored = re.compile(rb"(?m)^warning: \w+$")
    log.write_bytes(b"x" * pad + b" note: warning: unused\n")
    assert run.log_search(anchored) is False
    log.write_bytes(b"x" * pad + b"\nwarning: unused\nnext line\n")
    assert run.log_search(anchored) is True
    log.write_bytes(b"x" * pad + b"\nwarning: unused")
    assert run.log_search(anchored) is True
