"""The build check: a gate, so a tree that does not build is tested no further."""

from __future__ import annotations

from ssebench.core import Check, hookimpl

BUILD = Check(
    name="build",
    key="build",
    order=10,
    max_level=3,
    precedence=1,
    failure_reason=("The project failed to build. Please reassess the correctness of your patch."),
    gate=True,
)


@hookimpl
def ssebench_checks() -> list[Check]:
    return [BUILD]
