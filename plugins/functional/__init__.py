"""The functional tests: the project's own regression tests, covered when intent tests pass."""

from __future__ import annotations

from ssebench.core import Check, hookimpl

FUNCTIONAL = Check(
    name="functional tests",
    key="functional",
    order=40,
    max_level=2,
    precedence=2,
    failure_reason=(
        "One or more functionality test(s) failed. Please reassess your patch and make sure it "
        "fixes the vulnerability without compromising the program's functionality."
    ),
    covered_by="intent",
)


@hookimpl
def ssebench_checks() -> list[Check]:
    return [FUNCTIONAL]
