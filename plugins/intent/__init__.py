"""The intent tests: the tests that came with the upstream fix."""

from __future__ import annotations

from ssebench.core import Check, hookimpl

INTENT = Check(
    name="intent tests",
    key="intent",
    order=30,
    max_level=0,
    precedence=4,
    failure_reason=(
        "One or more intent test(s) failed. These tests validate behavior after the "
        "vulnerability fix. Please reassess your patch to ensure it correctly addresses the "
        "vulnerability and aligns with common patterns in the project."
    ),
    fails_as_shipped=True,
)


@hookimpl
def ssebench_checks() -> list[Check]:
    return [INTENT]
