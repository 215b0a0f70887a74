"""The Check: what a plugin declares, how a check ended, and which checks run at a level."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel

from ssebench.core.case import CaseRun


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "FAILED"
    NOT_RUN = "not run"


@dataclass(frozen=True)
class CheckOutcome:
    """How one enabled check ended; the input of `Check.detail` and of the report."""

    check: Check
    status: Status
    total_cases: int = 0
    cases: tuple[CaseRun, ...] = ()
    blocked_by: Check | None = None
    covered_by: Check | None = None
    unsupported: bool = False

    @property
    def passed_cases(self) -> int:
        return sum(case.passed for case in self.cases)

    @property
    def failed_case(self) -> CaseRun | None:
        return next((case for case in self.cases if not case.passed), None)


@dataclass(frozen=True)
class Outcome:
    """Every enabled check's outcome in run order, and the checks the level withholds."""

    level: int | None
    outcomes: tuple[CheckOutcome, ...]
    withheld: tuple[Check, ...]

    @property
    def failed(self) -> CheckOutcome | None:
        """The failure the headline reports: lowest precedence wins."""
        failures = [o for o in self.outcomes if o.status is Status.FAILED]
        return min(failures, key=lambda o: o.check.precedence, default=None)

    @property
    def all_passed(self) -> bool:
        return all(o.status is Status.PASSED for o in self.outcomes)


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
    `shows_fix` marks the check without which a passing result cannot show the bug is fixed
    (each of its cases must fail on the task's tree as shipped, or the task is unsound);
    `fails_as_shipped` marks a check that tests the fixed behaviour, so it should fail on the
    tree as shipped (`ssebench validate` warns when it passes there);
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
    fails_as_shipped: bool = False
    options: type[BaseModel] | None = None
    judge: Callable[[CaseRun], bool] = exit_status_judge
    detail: Callable[[CheckOutcome], str | None] = default_detail

    def __post_init__(self) -> None:
        if not self.failure_reason:
            reason = f"The {self.name} check failed. Please reassess your patch."
            object.__setattr__(self, "failure_reason", reason)

    def runs_at(self, level: int | None) -> bool:
        """None is the evaluator's level: every check runs."""
        return level is None or level <= self.max_level


@dataclass(frozen=True)
class LevelSplit:
    """The checks a level enables and the ones it withholds, each in run order."""

    enabled: tuple[Check, ...]
    withheld: tuple[Check, ...]


def split_by_level(checks: Iterable[Check], level: int | None) -> LevelSplit:
    """The one place that orders checks and filters them by level: the daemon's list, the
    orchestrator's run, the report's note and the tool's description all read it from here."""
    ordered = sorted(checks, key=lambda check: check.order)
    return LevelSplit(
        enabled=tuple(check for check in ordered if check.runs_at(level)),
        withheld=tuple(check for check in ordered if not check.runs_at(level)),
    )
