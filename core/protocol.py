"""The daemon's wire models, shared by the daemon app and the client so both read one schema."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

API_PREFIX = "/v1"


class _Wire(BaseModel):
    # Extra fields are ignored, so a newer daemon that adds one still talks to this client.
    model_config = ConfigDict(extra="ignore", frozen=True)


class Health(_Wire):
    status: str
    difficulty: int | None  # None: the evaluator's daemon, which withholds nothing


class CheckInfo(_Wire):
    key: str
    name: str
    cases: int
    timeout: float


class CheckList(_Wire):
    checks: list[CheckInfo]


class CaseAnswer(_Wire):
    """A judged case; the log itself stays in the daemon until fetched by `log_id`."""

    key: str
    index: int
    passed: bool
    exit_code: int | None
    signal: int | None
    timed_out: bool
    seconds: float
    log_id: str
    log_size: int


class ErrorAnswer(_Wire):
    error: str
