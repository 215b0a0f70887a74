"""The one hook a check plugin implements, and the markers plugins import."""

from __future__ import annotations

import pluggy

from ssebench.core.check import Check

PROJECT = "ssebench"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def ssebench_checks() -> list[Check]:  # type: ignore[empty-body]
    """Return the checks this plugin provides.

    Every plugin contributes (no firstresult); the host collects all of them, then orders,
    validates and runs them itself, so nothing depends on pluggy's call order.
    """
