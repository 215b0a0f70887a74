"""The evaluator's verdict as JSON: every check the task has, whatever the level."""

from __future__ import annotations

from typing import Any

from ssebench.core.check import Status
from ssebench.core.orchestrator import Outcome


def grade_json(outcome: Outcome) -> dict[str, Any]:
    checks = []
    for o in outcome.outcomes:
        checks.append(
            {
                "key": o.check.key,
                "name": o.check.name,
                "status": o.status.value.lower(),
                "detail": o.check.detail(o),
                "cases": [
                    {
                        "index": case.index,
                        "passed": case.passed,
                        "exit_code": case.exit_code,
                        "signal": case.signal,
                        "timed_out": case.timed_out,
                        "seconds": case.seconds,
                    }
                    for case in o.cases
                ],
            }
        )
    resolved = all(o.status is Status.PASSED for o in outcome.outcomes)
    return {"resolved": resolved, "checks": checks}
