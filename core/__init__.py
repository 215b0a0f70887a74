"""ssebench core: what a check plugin imports, and the orchestrator behind test_patch."""

from __future__ import annotations

from ssebench.core.check import (
    CaseResult,
    CaseRun,
    Check,
    CheckOutcome,
    Status,
    default_detail,
    exit_status_judge,
)
from ssebench.core.hookspecs import hookimpl, hookspec

__all__ = [
    "CaseResult",
    "CaseRun",
    "Check",
    "CheckOutcome",
    "Status",
    "default_detail",
    "exit_status_judge",
    "hookimpl",
    "hookspec",
]
