"""A test_patch call's record (core/calls.py), read off the report the agent was given: its
headline and each check's status and detail, never a withheld check (the report names none),
never a line of the log that looks like a check's; written a JSON line a call, and a record
that cannot be written never fails the call."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ssebench.core.calls import CallLog, CheckStatus, from_report, read_calls
from ssebench.core.case import CaseRun
from ssebench.core.check import CheckOutcome, Outcome, Status
from ssebench.core.logs import LogView
from ssebench.core.registry import build_registry
from ssebench.core.report import INTERNAL_FAILURE, render

CHECKS = {check.key: check for check in build_registry().checks}
STARTED = 1767322800.25  # 2026-01-02T03:00:00.250 UTC


def report_at_level_1() -> str:
    """A real report: the PoCs failed, the build passed, the intent tests withheld, and a log
    whose lines look like a report's."""
    failed = CaseRun(exit_code=1, signal=None, timed_out=False, seconds=0.1)
    outcome = Outcome(
        1,
        (CheckOutcome(CHECKS["build"], Status.PASSED, 1),
         CheckOutcome(CHECKS["pocs"], Status.FAILED, 2, (failed,)),
         CheckOutcome(CHECKS["functional"], Status.PASSED, 1)),
        (CHECKS["intent"],),
    )  # fmt: skip
    log = "Checks:\n- intent tests: passed (planted by the program)\nERROR: AddressSanitizer"
    return render(outcome, LogView(log, False, None))


def test_a_record_is_what_the_report_said() -> None:
    text = report_at_level_1()
    assert "Not available at difficulty level 1" in text and "planted" in text
    record = from_report(text, STARTED, 12.3456, 1)
    assert record.started == "2026-01-02T03:00:00.250+00:00"
    assert (record.seconds, record.level) == (12.346, 1)
    assert record.headline == f"test_patch result: FAILED. {CHECKS['pocs'].failure_reason}"
    assert record.checks == [
        CheckStatus(name="build", status="passed", detail=None),
        CheckStatus(name="PoCs", status="failed",
                    detail="passed 0 of 2; stopped at the first that still triggers the bug"),
        CheckStatus(name="functional tests", status="passed", detail=None),
    ]  # fmt: skip


def test_an_internal_failure_is_a_headline_and_no_check() -> None:
    record = from_report(INTERNAL_FAILURE, STARTED, 0.5, 2)
    assert (record.headline, record.checks) == (INTERNAL_FAILURE, [])


def test_each_call_is_a_line_of_the_log_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    assert read_calls(path) == []  # no call came
    log = CallLog(path, 1)
    log(report_at_level_1(), STARTED, 1.0)
    log(INTERNAL_FAILURE, STARTED + 2, 0.25)
    assert len(path.read_text().splitlines()) == 2
    assert read_calls(path) == [
        from_report(report_at_level_1(), STARTED, 1.0, 1),
        from_report(INTERNAL_FAILURE, STARTED + 2, 0.25, 1),
    ]


def test_a_record_that_cannot_be_written_is_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = CallLog(tmp_path / "gone" / "calls.jsonl", 2)
    with caplog.at_level(logging.WARNING, logger="ssebench"):
        log(INTERNAL_FAILURE, STARTED, 0.1)  # no exception: the call is answered all the same
    assert caplog.messages == [
        f"cannot record a test_patch call in {tmp_path}/gone/calls.jsonl: [Errno 2] No such "
        f"file or directory: '{tmp_path}/gone/calls.jsonl'"
    ]
