"""The evaluator's verdict as JSON: every check the task has, whatever the level."""

from __future__ import annotations

from typing import Any

from ssebench.core.case import CaseRun
from ssebench.core.check import Outcome, Status

# What a case tells the evaluator; its log id and size mean nothing once the daemon is gone.
CASE_FIELDS = ("index", "passed", "exit_code", "signal", "timed_out", "seconds")


def case_json(case: CaseRun) -> dict[str, Any]:
    return {name: getattr(case, name) for name in CASE_FIELDS}


def grade_json(outcome: Outcome) -> dict[str, Any]:
    checks = [
        {
            "key": o.check.key,
            "name": o.check.name,
            "status": o.status.value.lower(),
            "detail": o.check.detail(o),
            "cases": [case_json(case) for case in o.cases],
        }
        for o in outcome.outcomes
    ]
    resolved = all(o.status is Status.PASSED for o in outcome.outcomes)
    return {"resolved": resolved, "checks": checks}
