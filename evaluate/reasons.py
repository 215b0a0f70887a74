"""Why a verdict is what it is, in one word: the failure a report's headline would name.

A grade's reason is the failed check of the lowest precedence (the spec's: build, functional
tests, PoCs, intent tests), as the headline chooses it, or that the patch did not apply; a run
adds what no grade says: an empty patch (not graded), a grade stopped at `--timeout`, an error.
A check is named by its key in a table here, as the evaluator words it; a third-party check's
failure is `<key>-failed`.
"""

from __future__ import annotations

from ssebench.core.check import Outcome, Status

RESOLVED = "resolved"
EMPTY_PATCH = "empty-patch"
PATCH_DOES_NOT_APPLY = "patch-does-not-apply"
TIMEOUT = "timeout"
ERROR = "error"
FAILED = {
    "build": "build-failed",
    "pocs": "poc-still-triggers",
    "intent": "intent-failed",
    "functional": "functional-failed",
}
# Every reason a run knows of, in the order its page and summary list them.
REASONS = (RESOLVED, EMPTY_PATCH, PATCH_DOES_NOT_APPLY, *FAILED.values(), TIMEOUT, ERROR)


def failed(key: str) -> str:
    return FAILED.get(key, f"{key}-failed")


def reason_of(outcome: Outcome | None, patch_error: str | None) -> str:
    """A grade's reason: the patch did not apply, the headline's failure, or resolved. A check
    that did not run without a failure before it (a daemon that cannot run it: never in a
    grade) is `<key>-not-run`."""
    if patch_error is not None or outcome is None:
        return PATCH_DOES_NOT_APPLY
    if outcome.failed is not None:
        return failed(outcome.failed.check.key)
    unrun = next((o for o in outcome.outcomes if o.status is not Status.PASSED), None)
    return RESOLVED if unrun is None else f"{unrun.check.key}-not-run"


def in_order(seen: list[str]) -> list[str]:
    """Every known reason, then the others `seen` holds, each once."""
    return list(dict.fromkeys([*REASONS, *seen]))
