"""The daemon's wire models, shared by the daemon app and the client so both read one schema.

A run's answer is the case record itself (`ssebench.core.case`), less its daemon-side fields.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter

from ssebench.core.case import DAEMON_SIDE, CaseRun

API_PREFIX = "/v1"


class _Wire(BaseModel):
    # Extra fields are ignored, so a newer daemon that adds one still talks to this client.
    # Built at first use: `serve` starts without them (bench/startup.py).
    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)


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


class ErrorAnswer(_Wire):
    error: str


class CallRequest(_Wire):
    """POST /v1/calls: a call begins; its checks, in the order they may run."""

    checks: list[str]


class CallAnswer(_Wire):
    """The call's id (its runs name it: they run on the tree as it was when it began) and
    its checks, as /v1/checks lists them."""

    call: str
    checks: list[CheckInfo]


class CallState(_Wire):
    """GET /v1/calls/{id}: whether the agent changed its tree since the call began."""

    call: str
    changed: bool


@functools.cache
def _case_wire() -> TypeAdapter[CaseRun]:
    """Built at first use: a daemon in this process never puts a case on the wire, and `serve`
    starts sooner without it (bench/startup.py)."""
    return TypeAdapter(CaseRun)


def case_to_wire(case: CaseRun) -> dict[str, Any]:
    """The JSON object the daemon answers a run with: the record less its daemon-side fields."""
    wire: dict[str, Any] = _case_wire().dump_python(case, mode="json", exclude=set(DAEMON_SIDE))
    return wire


def case_from_wire(data: bytes | str) -> CaseRun:
    """The record back from the daemon's JSON; unknown fields are ignored (a newer daemon), and
    so are daemon-side ones."""
    return _case_wire().validate_json(data).off_the_daemon()
