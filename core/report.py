"""The report: every text the spec quotes, assembled from the outcome of the enabled checks."""

from __future__ import annotations

import logging

from ssebench.core.check import CheckOutcome, Outcome
from ssebench.core.errors import DaemonError
from ssebench.core.levels import level_name
from ssebench.core.logs import LogView

log = logging.getLogger("ssebench")

INTERNAL_FAILURE = (
    "An internal testing failure occurred. Your patch is not responsible for this failure."
)
HEADLINE = "test_patch result:"
NOTHING_RAN = (
    "test_patch has nothing to run at this level, so this result says nothing about your patch."
)
NOT_SAVED = "(Full log could not be saved due to an internal error)"


def internal_failure(cause: BaseException | str) -> str:
    """The spec's answer when testing itself failed: the only place that gives it. The cause
    goes to our own log (stderr), never to the agent; a bug of ours comes with its traceback."""
    if isinstance(cause, str | DaemonError):
        log.error("internal testing failure: %s", cause)
    else:
        log.error("internal testing failure", exc_info=cause)
    return INTERNAL_FAILURE


def check_line(outcome: CheckOutcome) -> str:
    detail = outcome.check.detail(outcome)
    line = f"- {outcome.check.name}: {outcome.status.value}"
    return f"{line} ({detail})" if detail else line


def headline(outcome: Outcome) -> str:
    failed = outcome.failed
    if failed is not None:
        return f"{HEADLINE} FAILED. {failed.check.failure_reason}"
    if not outcome.outcomes:
        return f"{HEADLINE} no checks ran."
    if outcome.withheld or not outcome.all_passed:
        return f"{HEADLINE} every check that ran passed."
    return f"{HEADLINE} every check passed."


def availability_note(outcome: Outcome) -> str | None:
    if not outcome.withheld or outcome.level is None:
        return None
    names = ", ".join(check.name for check in outcome.withheld)
    note = (
        f"Not available at difficulty level {outcome.level} ({level_name(outcome.level)}): "
        f"{names}. Nothing is reported about them."
    )
    if not outcome.outcomes:
        return f"{note} {NOTHING_RAN}"
    proof = next((check for check in outcome.withheld if check.shows_fix), None)
    if proof is not None and outcome.failed is None:
        note += (
            f" Without the {proof.name}, this result does not show whether the vulnerability"
            " is fixed."
        )
    return note


def log_section(check_name: str, view: LogView) -> str:
    if not view.truncated:
        return f"Full log ({check_name}):\n{view.text}"
    saved = f"Full log available at {view.saved_path}" if view.saved_path else NOT_SAVED
    return f"Truncated log ({check_name}):\n{view.text}\n\n{saved}"


def render(outcome: Outcome, view: LogView | None = None) -> str:
    parts = [headline(outcome)]
    if outcome.outcomes:
        parts.append("\n".join(["Checks:", *(check_line(o) for o in outcome.outcomes)]))
    note = availability_note(outcome)
    if note:
        parts.append(note)
    failed = outcome.failed
    if failed is not None and view is not None:
        parts.append(log_section(failed.check.name, view))
    return "\n\n".join(parts)
