"""ssebench core: what a check plugin imports, and the domain behind test_patch.

A plugin needs only this module: `from ssebench.core import Check, hookimpl`.
"""

from __future__ import annotations

from ssebench.core.case import CaseRun
from ssebench.core.check import (
    Check,
    CheckOutcome,
    Status,
    default_detail,
    exit_status_judge,
)
from ssebench.core.hookspecs import hookimpl, hookspec

__all__ = [
    "CaseRun",
    "Check",
    "CheckOutcome",
    "Status",
    "default_detail",
    "exit_status_judge",
    "hookimpl",
    "hookspec",
]
