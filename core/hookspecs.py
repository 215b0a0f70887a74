"""The one hook a check plugin implements, and the markers plugins import.

The markers are typed as tox types its own (`impl: Callable[[_F], _F]`), so a plugin decorated
with `@hookimpl` keeps its signature under `mypy --strict`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pluggy

from ssebench.core.check import Check

PROJECT = "ssebench"
_F = TypeVar("_F", bound=Callable[..., Any])
hookspec: Callable[[_F], _F] = pluggy.HookspecMarker(PROJECT)
hookimpl: Callable[[_F], _F] = pluggy.HookimplMarker(PROJECT)


@hookspec
def ssebench_checks() -> list[Check]:  # type: ignore[empty-body]
    """Return the checks this plugin provides.

    Every plugin contributes (no firstresult); the host collects all of them, then orders,
    validates and runs them itself, so nothing depends on pluggy's call order.
    """
