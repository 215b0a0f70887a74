"""`grade --tasks ... --rejudge`: every verdict of a run judged again from what its grade saved,
by today's rules (a fixed `triggered_if`, a new sanitizer pattern), running nothing.

A grade keeps, per case, its log (`logs/<key>-<index>.log`, its sanitizers' reports copied in)
and how it ended (result.json: exit status, signal, timed out, the status its sanitizers were
told to end it with). A rejudge hands those to today's checks as the daemon would have handed
the case itself (`SavedCases`, the orchestrator's `Daemon` over saved cases), each judged by
its check's judge with the options today's task.toml gives it, and the orchestrator applies
its rules as in a grade (a failed build stops every later check; PoCs stop at the first that
still triggers). A case those rules now reach that the grade never ran (a PoC after one that
now passes) cannot be judged from what was saved: that verdict is an error of the rejudge,
left as it was, and a grade without `--rejudge` grades it again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ssebench.core.case import CaseRun
from ssebench.core.check import Check
from ssebench.core.daemons.door import Task
from ssebench.core.logsource import LogSource
from ssebench.core.orchestrator import run_checks
from ssebench.evaluate.batch import LOGS, RESULT
from ssebench.evaluate.digests import sha256
from ssebench.evaluate.grade import log_name, patched_grade
from ssebench.evaluate.predictions import Prediction
from ssebench.evaluate.verdicts import CaseVerdict, SavedGrade, dump, read_saved, write_json

NO_VERDICT = "no verdict to rejudge: grade it first (without --rejudge)"


class NotSaved(Exception):
    """A case today's rules reach that the grade did not keep."""


@dataclass(frozen=True)
class Rejudged:
    before: dict[str, Any]  # result.json as it was
    after: dict[str, Any]  # and as today's rules judge it

    @property
    def changed(self) -> bool:
        return bool(_judged(self.before) != _judged(self.after))


def _judged(result: dict[str, Any]) -> Any:
    """What a rejudge can change: the verdict, its reason, each check's and case's."""
    checks = [(c["key"], c["status"], [case["passed"] for case in c["cases"]])
              for c in result.get("checks", [])]  # fmt: skip
    return result["resolved"], result.get("reason"), checks


class SavedCases:
    """The orchestrator's daemon over one grade's saved cases, judged by today's checks."""

    def __init__(self, task: Task, saved: SavedGrade, logs: Path) -> None:
        self.task = task
        self.logs = logs
        self.cases: dict[tuple[str, int], CaseVerdict] = {
            (check.key, case.index): case for check in saved.checks for case in check.cases
        }

    async def begin(self, plan: Sequence[Check]) -> dict[str, int | None]:
        return {c.key: len(t.cases) if (t := self.task.checks.get(c.key)) else 0 for c in plan}

    async def tree_changed(self) -> bool:
        return False  # the saved logs are the grade's one tree

    async def run_case(self, check: Check, index: int) -> CaseRun:
        saved = self.cases.get((check.key, index))
        log = self.logs / log_name(check.key, index)
        if saved is None or not log.is_file():
            kept = "never ran in the grade" if saved is None else f"has no saved log ({log})"
            raise NotSaved(f"{check.name} case {index} {kept}")
        # The saved case is the record as the grade wrote it: read back whole, less its verdict.
        run = CaseRun(
            **saved.model_dump(exclude={"passed"}),
            log_path=log,
            options=self.task.checks[check.key].options_of(index),
            key=check.key,
        )
        return replace(run, passed=bool(check.judge(run)))

    async def open_log(self, case: CaseRun) -> LogSource:
        raise NotSaved("a rejudge reads logs through the judges only")


async def rejudge(item: Prediction, folder: Path, task: Task, checks: Sequence[Check]) -> Rejudged:
    """`item`'s verdict in `folder` judged again, and written when it changed; ValueError (one
    line) when it cannot be."""
    saved = read_saved(folder / RESULT)
    if saved is None:
        raise ValueError(NO_VERDICT)
    recorded = saved.graded_with
    if recorded is None or recorded.patch_sha256 != sha256(item.patch_bytes):
        raise ValueError("its verdict was graded from another patch: grade it (without --rejudge)")
    before = dump(saved)
    if saved.patch is not None and not saved.patch.applied:
        return Rejudged(before, before)  # no check ran: nothing to judge
    try:
        outcome = await run_checks(checks, None, SavedCases(task, saved, folder / LOGS),
                                   coverage=False)  # fmt: skip
    except NotSaved as exc:
        raise ValueError(f"cannot rejudge from its saved logs: {exc}") from None
    grade = patched_grade(outcome, None)
    after = {**before, "resolved": grade.resolved, "reason": grade.reason,
             "checks": [dump(check) for check in grade.checks]}  # fmt: skip
    judged = Rejudged(before, after)
    if judged.changed:
        write_json(folder / RESULT, after)
    return judged
