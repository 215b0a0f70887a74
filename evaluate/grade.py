"""The evaluator's verdict as JSON: every check the task has, whatever the level."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from ssebench.core.case import CaseRun
from ssebench.core.check import Outcome, Status
from ssebench.core.logs import in_worker
from ssebench.core.logsource import Joined, LogSource
from ssebench.core.orchestrator import Daemon
from ssebench.core.savedlogs import write_whole
from ssebench.core.toolfiles import Graft
from ssebench.evaluate.reasons import reason_of
from ssebench.evaluate.toolsignals import output_signals
from ssebench.evaluate.verdicts import (
    Applied,
    CaseVerdict,
    CheckVerdict,
    Grade,
    PatchGrade,
    Protected,
    Signal,
    dump,
)


def case_json(case: CaseRun) -> dict[str, Any]:
    return dump(_case(case))


def _case(case: CaseRun) -> CaseVerdict:
    """What a case tells the evaluator: the fields `CaseVerdict` declares, read off the case's
    one record (its log id and size mean nothing once the daemon is gone)."""
    return CaseVerdict.model_validate(case, from_attributes=True)


def _checks(outcome: Outcome) -> list[CheckVerdict]:
    return [
        CheckVerdict(
            key=o.check.key,
            name=o.check.name,
            status=o.status.value.lower(),
            detail=o.check.detail(o),
            cases=[_case(case) for case in o.cases],
        )
        for o in outcome.outcomes
    ]


def grade_json(outcome: Outcome) -> dict[str, Any]:
    resolved = all(o.status is Status.PASSED for o in outcome.outcomes)
    reason = reason_of(outcome, None)
    return dump(Grade(resolved=resolved, reason=reason, checks=_checks(outcome)))


def patched_grade(outcome: Outcome | None, patch_error: str | None) -> PatchGrade:
    """A grade of a patch, before `reviewed` adds what the grade did to it and the signals. A
    patch that does not apply runs no check and is unresolved."""
    checks = _checks(outcome) if outcome is not None else []
    resolved = outcome is not None and all(o.status is Status.PASSED for o in outcome.outcomes)
    return PatchGrade(
        resolved=patch_error is None and resolved,
        reason=reason_of(outcome, patch_error),
        patch=Applied(applied=patch_error is None, error=patch_error, dropped=[]),
        protected=Protected(reverted=[]),
        signals=[],
        checks=checks,
    )


def reviewed(grade: PatchGrade, graft: Graft, signals: Sequence[Signal]) -> PatchGrade:
    """A grade (made here, or in a task's image on a copy made here) with what was done to the
    patch before its checks and the signals, a build output dropped among them."""
    dropped = sorted(graft.dropped)
    return grade.model_copy(
        update={
            "patch": grade.patch.model_copy(update={"dropped": dropped}),
            "protected": Protected(reverted=sorted(set(graft.reverted))),
            "signals": [*signals, *output_signals(graft.dropped, signals)],
        }
    )


def log_name(key: str, index: int) -> str:
    """A case's saved log: the check's key and the case's index, as in the grade JSON."""
    return f"{key}-{index}.log"


async def save_logs(daemon: Daemon, outcome: Outcome, folder: Path) -> None:
    """Every case that ran, its whole log in `folder`, read while the daemon still has them."""
    folder.mkdir(parents=True, exist_ok=True)
    for checked in outcome.outcomes:
        for case in checked.cases:
            target = folder / log_name(checked.check.key, case.index)
            source = await daemon.open_log(case)
            await in_worker(partial(_write, source, target))


def _write(source: LogSource, target: Path, stop: threading.Event) -> None:
    """The log in `target`, copied by the kernel where it is a file here; closes the source."""
    with Joined([source]) as log:
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
        try:
            write_whole(log, out, stop)
        finally:
            os.close(out)
