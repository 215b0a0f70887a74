"""ssebench core: what a check plugin imports, and the domain behind test_patch.

A plugin needs only this module: `from ssebench.core import Check, hookimpl`. The names load
when first used, so that a module of core that needs nothing else (`ssebench.core.errors`,
imported by the case supervisor, whose every fork copies what it loaded) loads no pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as mypy sees them, re-exported
    from ssebench.core.case import CaseRun as CaseRun
    from ssebench.core.check import Check as Check
    from ssebench.core.check import CheckOutcome as CheckOutcome
    from ssebench.core.check import Status as Status
    from ssebench.core.check import default_detail as default_detail
    from ssebench.core.check import exit_status_judge as exit_status_judge
    from ssebench.core.hookspecs import hookimpl as hookimpl
    from ssebench.core.hookspecs import hookspec as hookspec

_WHERE = {
    "CaseRun": "ssebench.core.case",
    "Check": "ssebench.core.check",
    "CheckOutcome": "ssebench.core.check",
    "Status": "ssebench.core.check",
    "default_detail": "ssebench.core.check",
    "exit_status_judge": "ssebench.core.check",
    "hookimpl": "ssebench.core.hookspecs",
    "hookspec": "ssebench.core.hookspecs",
}
__all__ = list(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'ssebench.core' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
