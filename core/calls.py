"""What one test_patch call said, as a record: how the agent got where it did.

`ssebench run --prediction-out` keeps each call's record with the prediction (the line's
`test_patch_calls`), and `grade` copies them into the verdict. A record is read off the report
the agent was given, so it holds nothing the agent did not see: a check the level withholds is
absent (the report names none of its results), never its detail. The server appends one JSON line
per call to a file of `run`'s own (`CallLog`); the server module only hands each answer on.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ssebench.core.check import Status

log = logging.getLogger("ssebench")
CHECKS_HEADER = "Checks:"
# A check's line of the report: `- NAME: STATUS` and its detail in parentheses.
_CHECK_LINE = re.compile(
    "- (?P<name>.+?): (?P<status>" + "|".join(re.escape(s.value) for s in Status) + r")"
    r"(?: \((?P<detail>.*)\))?"
)


class CallRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class CheckStatus(CallRecord):
    name: str = Field(description="the check's name, as the report prints it")
    status: str = Field(description="`passed`, `failed` or `not run`")
    detail: str | None = Field(
        None, description="the text the report put in parentheses, or `null`"
    )


class TestPatchCall(CallRecord):
    """One call of test_patch, as its report told the agent."""

    __test__ = False  # a record, not a test class (pytest collects Test*)

    started: str = Field(description="when the call came, ISO 8601 in UTC")
    seconds: float = Field(ge=0, description="how long it took to answer")
    level: int = Field(description="the difficulty level it ran at")
    headline: str = Field(description="its report's first line")
    checks: list[CheckStatus] = Field(
        default_factory=list,
        description="each check the level runs, as the report listed it; a withheld check is "
        "absent",
    )


def from_report(text: str, started: float, seconds: float, level: int) -> TestPatchCall:
    """The record of a call that answered `text`, came at `started` (a Unix time) and took
    `seconds`."""
    lines = text.split("\n")
    checks: list[CheckStatus] = []
    if CHECKS_HEADER in lines:
        for line in lines[lines.index(CHECKS_HEADER) + 1 :]:
            found = _CHECK_LINE.fullmatch(line)
            if found is None:
                break
            status = found["status"].lower()
            checks.append(CheckStatus(name=found["name"], status=status, detail=found["detail"]))
    return TestPatchCall(
        started=datetime.fromtimestamp(started, UTC).isoformat(timespec="milliseconds"),
        seconds=round(max(seconds, 0.0), 3),
        level=level,
        headline=lines[0],
        checks=checks,
    )


class CallLog:
    """Appends each call's record to `path`, a JSON line each; a record that cannot be written
    is a warning in our log, never a failed call."""

    def __init__(self, path: Path, level: int) -> None:
        self.path = path
        self.level = level

    def __call__(self, text: str, started: float, seconds: float) -> None:
        record = from_report(text, started, seconds, self.level)
        try:
            with self.path.open("a", encoding="utf-8") as file:
                file.write(record.model_dump_json() + "\n")
        except OSError as exc:
            log.warning("cannot record a test_patch call in %s: %s", self.path, exc)


def read_calls(path: Path) -> list[TestPatchCall]:
    """The records `CallLog` wrote, in order; none when there is no file (no call came)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [TestPatchCall.model_validate_json(line) for line in text.splitlines() if line]
