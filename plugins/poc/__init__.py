"""The proofs of concept: each passes when it no longer triggers the bug."""

from __future__ import annotations

import re
import signal
from functools import cached_property
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from ssebench.core import CaseRun, Check, CheckOutcome, Status, default_detail, hookimpl

# Ours, and SEC-bench's six (UBSan's DEADLYSIGNAL and SUMMARY among them).
SANITIZER_REPORT = re.compile(
    rb"ERROR: AddressSanitizer|runtime error:|(ERROR|WARNING): MemorySanitizer|"
    rb"WARNING: ThreadSanitizer|ERROR: LeakSanitizer|ERROR: HWAddressSanitizer|"
    rb"UndefinedBehaviorSanitizer:DEADLYSIGNAL|"
    rb"SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior"
)
FATAL_SIGNALS = frozenset(
    int(s) for s in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL)
)

# Strict, so `exit_codes = [true]` or `["1"]` in task.toml is an error rather than a guess.
ExitStatus = Annotated[int, Field(strict=True, ge=0, le=255)]


class TriggeredIf(BaseModel):
    """What counts as the bug still triggering; a task narrows or widens the default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sanitizer: StrictBool = True
    signal: StrictBool = True
    timeout: StrictBool = True
    exit_codes: tuple[ExitStatus, ...] = ()
    # When given, the only exit statuses a PoC can pass with: any other triggers (a harness
    # that judges by exit status alone: upstream ssebench's run.sh, SEC-bench's `exit_code`).
    passing_exit_codes: tuple[ExitStatus, ...] | None = None
    output_regex: str = ""

    @field_validator("output_regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value.encode())  # the log is bytes: compile what `pattern` will compile
        except (re.error, ValueError) as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return value

    @cached_property
    def pattern(self) -> re.Pattern[bytes] | None:
        return re.compile(self.output_regex.encode()) if self.output_regex else None


class PocOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    triggered_if: TriggeredIf = TriggeredIf()


def _status(run: CaseRun) -> int | None:
    """The exit status as a shell gives it: 128+N for signal N. (Our runner reports a status
    of 128+N as signal N, the same under every mechanism; `exit_codes` may name either.)"""
    return run.exit_code if run.signal is None else 128 + run.signal


def _fatal_signal(run: CaseRun) -> bool:
    status = _status(run)
    return status is not None and status - 128 in FATAL_SIGNALS


def _ended_triggered(rule: TriggeredIf, run: CaseRun) -> bool:
    """How the run ended shows the bug: a fatal signal, the status its sanitizers were told to
    end it with (a report, whatever became of its text), a status that triggers, or one that
    is not among the passing ones."""
    status = _status(run)
    if (rule.signal and _fatal_signal(run)) or status in rule.exit_codes:
        return True
    if rule.sanitizer and run.sanitizer_exit is not None and status == run.sanitizer_exit:
        return True
    return rule.passing_exit_codes is not None and status not in rule.passing_exit_codes


def still_triggers(run: CaseRun) -> bool:
    rule = run.options.triggered_if if isinstance(run.options, PocOptions) else TriggeredIf()
    if run.timed_out:
        if rule.timeout:
            return True
        # We ended the run, so its exit status is ours; only what it printed can still tell.
    elif _ended_triggered(rule, run):
        return True
    if rule.sanitizer and run.log_search(SANITIZER_REPORT):
        return True
    return rule.pattern is not None and run.log_search(rule.pattern)


def judge(run: CaseRun) -> bool:
    return not still_triggers(run)


def detail(outcome: CheckOutcome) -> str | None:
    if outcome.total_cases and outcome.status is Status.PASSED:
        return f"{outcome.passed_cases} of {outcome.total_cases}"
    if outcome.status is Status.FAILED:
        return (
            f"passed {outcome.passed_cases} of {outcome.total_cases}; "
            "stopped at the first that still triggers the bug"
        )
    return default_detail(outcome)


POCS = Check(
    name="PoCs",
    key="pocs",
    order=20,
    max_level=1,
    precedence=3,
    failure_reason=(
        "At least one proof-of-concept (PoC) still triggers the vulnerability. Please reassess "
        "your patch and make sure it fixes the root cause of the vulnerability."
    ),
    stop_at_first_failed_case=True,
    shows_fix=True,
    options=PocOptions,
    judge=judge,
    detail=detail,
)


@hookimpl
def ssebench_checks() -> list[Check]:
    return [POCS]
