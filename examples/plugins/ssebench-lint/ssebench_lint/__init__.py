"""The lint check: the task's linter must exit 0 and print no line matching `fail_on`."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, field_validator

from ssebench.core import CaseRun, Check, CheckOutcome, default_detail, exit_status_judge, hookimpl


class LintOptions(BaseModel):
    """The extra keys a task may put in its `[checks.lint]` table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fail_on: str = "warning:"  # a regular expression; "" judges by the exit status alone

    @field_validator("fail_on")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return value


def judge(run: CaseRun) -> bool:
    """Daemon side: exit status 0 in time, and no line of the log matches `fail_on`."""
    options = run.options if isinstance(run.options, LintOptions) else LintOptions()
    if not exit_status_judge(run):
        return False
    if not options.fail_on:
        return True
    # The log may be huge: log_search scans it from disk in chunks.
    return not run.log_search(re.compile(options.fail_on.encode(), re.MULTILINE))


def detail(outcome: CheckOutcome) -> str | None:
    """Server side: say why when the linter exited 0 but printed a warning."""
    case = outcome.failed_case
    if case is not None and case.exit_code == 0 and not case.timed_out:
        return "warnings found"
    return default_detail(outcome)


LINT = Check(
    name="lint",
    key="lint",
    order=35,  # after the intent tests (30), before the functional tests (40)
    max_level=2,  # runs at levels 0, 1 and 2
    precedence=5,  # every built-in's reason wins over ours
    failure_reason=(
        "The lint check failed. Please fix the warnings it reports without changing the "
        "program's behaviour."
    ),
    options=LintOptions,
    judge=judge,
    detail=detail,
)


@hookimpl
def ssebench_checks() -> list[Check]:
    return [LINT]
