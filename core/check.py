"""The Check: what a plugin declares, and the run records its behaviours see."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel

_SCAN_CHUNK = 1 << 20
_LINE_OVERLAP = 1 << 16


@dataclass(frozen=True)
class CaseRun:
    """One finished case as the daemon saw it; the input of `Check.judge`.

    The log stays on disk: a judge that needs the output scans it with `log_search`.
    """

    exit_code: int | None
    signal: int | None
    timed_out: bool
    seconds: float
    log_path: Path
    options: BaseModel | None = None

    def log_search(self, pattern: re.Pattern[bytes]) -> bool:
        """Whether `pattern` matches in the log, read in chunks so a huge log never sits in memory.

        Each search covers whole lines only (an unfinished line waits for the next chunk), so
        `^` and `$` mean what they say. A match spanning lines across two chunks is not found;
        a single line longer than 4 MiB is searched in overlapping pieces.
        """
        pending = b""
        with self.log_path.open("rb") as log:
            while chunk := log.read(_SCAN_CHUNK):
                data = pending + chunk
                cut = data.rfind(b"\n") + 1  # the end of the last whole line
                if cut == 0 and len(data) > 4 * _SCAN_CHUNK:
                    if pattern.search(data):
                        return True
                    pending = data[-_LINE_OVERLAP:]
                    continue
                if cut and pattern.search(data, 0, cut):
                    return True
                pending = data[cut:]
        return bool(pending) and pattern.search(pending) is not None


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "FAILED"
    NOT_RUN = "not run"


@dataclass(frozen=True)
class CaseResult:
    """A judged case as the orchestrator receives it over the wire."""

    index: int
    passed: bool
    exit_code: int | None
    signal: int | None
    timed_out: bool
    seconds: float
    log_id: str
    log_size: int


@dataclass(frozen=True)
class CheckOutcome:
    """How one enabled check ended; the input of `Check.detail` and of the report."""

    check: Check
    status: Status
    total_cases: int = 0
    cases: tuple[CaseResult, ...] = ()
    blocked_by: Check | None = None
    covered_by: Check | None = None
    unsupported: bool = False

    @property
    def passed_cases(self) -> int:
        return sum(case.passed for case in self.cases)

    @property
    def failed_case(self) -> CaseResult | None:
        return next((case for case in self.cases if not case.passed), None)


def exit_status_judge(run: CaseRun) -> bool:
    """Build and tests pass when the command exits 0 within its time limit."""
    return run.exit_code == 0 and not run.timed_out


def default_detail(outcome: CheckOutcome) -> str | None:
    """The details every check shares; a plugin's own `detail` can fall back to this."""
    if outcome.blocked_by is not None:
        return f"the {outcome.blocked_by.name} failed"
    if outcome.unsupported:
        return "this daemon cannot run it"
    if outcome.covered_by is not None:
        return f"covered by the {outcome.covered_by.name}"
    if outcome.status is Status.PASSED and outcome.total_cases == 0:
        return "the task has none"
    return None


@dataclass(frozen=True)
class Check:
    """A kind of check a task can have. The orchestrator knows the rules only through these fields.

    `max_level` is the highest difficulty level at which the check runs; `precedence` decides
    whose failure reason the headline carries (lowest wins); `gate` stops every later check when
    this one fails; `covered_by` is the key of a check whose real pass lets this one pass unrun;
    `shows_fix` marks the check without which a passing result cannot show the bug is fixed;
    `options` is a pydantic model for the extra keys this check accepts in its task.toml table.
    """

    name: str
    key: str
    order: int
    max_level: int
    precedence: int
    failure_reason: str = ""
    gate: bool = False
    stop_at_first_failed_case: bool = False
    covered_by: str | None = None
    shows_fix: bool = False
    options: type[BaseModel] | None = None
    judge: Callable[[CaseRun], bool] = exit_status_judge
    detail: Callable[[CheckOutcome], str | None] = default_detail
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.failure_reason:
            reason = f"The {self.name} check failed. Please reassess your patch."
            object.__setattr__(self, "failure_reason", reason)

    def runs_at(self, level: int | None) -> bool:
        """None is the evaluator's level: every check runs."""
        return level is None or level <= self.max_level
