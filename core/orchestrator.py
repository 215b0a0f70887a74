"""Runs the enabled checks through a daemon by the rules the Check fields declare.

Build gate, PoC stop, intent-covers-functional: none is named here. A gate's failure blocks
every later check, `stop_at_first_failed_case` ends a check at its first failing case, and
`covered_by` lets a check pass unrun when the covering check really ran and passed.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ssebench.core.check import CaseResult, Check, CheckOutcome, Status
from ssebench.core.client import Daemon, DaemonError
from ssebench.core.logs import LogView, view_log, view_log_files
from ssebench.core.report import INTERNAL_FAILURE, render

log = logging.getLogger("ssebench")

Progress = Callable[[float, float | None, str], Awaitable[None]]


@dataclass(frozen=True)
class Outcome:
    """Every enabled check's outcome in run order, and the checks the level withholds."""

    level: int | None
    outcomes: tuple[CheckOutcome, ...]
    withheld: tuple[Check, ...]

    @property
    def failed(self) -> CheckOutcome | None:
        """The failure the headline reports: lowest precedence wins."""
        failures = [o for o in self.outcomes if o.status is Status.FAILED]
        return min(failures, key=lambda o: o.check.precedence, default=None)

    @property
    def all_passed(self) -> bool:
        return all(o.status is Status.PASSED for o in self.outcomes)


async def run_checks(
    checks: Sequence[Check],
    level: int | None,
    daemon: Daemon,
    *,
    coverage: bool = True,
    progress: Progress | None = None,
) -> Outcome:
    """`level` None runs everything (the evaluator); `coverage` False runs covered checks too."""
    enabled = sorted((c for c in checks if c.runs_at(level)), key=lambda c: c.order)
    withheld = tuple(sorted((c for c in checks if not c.runs_at(level)), key=lambda c: c.order))
    counts = await daemon.case_counts(enabled) if enabled else {}
    total = sum(n or 0 for n in counts.values())
    done = 0

    async def report(message: str) -> None:
        if progress is not None:
            await progress(done, total, message)

    outcomes: dict[str, CheckOutcome] = {}
    blocker: Check | None = None
    for check in enabled:
        count = counts[check.key]
        cover = outcomes.get(check.covered_by) if coverage and check.covered_by else None
        if blocker is not None:
            outcome = CheckOutcome(check, Status.NOT_RUN, count or 0, blocked_by=blocker)
        elif count is None:
            outcome = CheckOutcome(check, Status.NOT_RUN, unsupported=True)
        elif count and cover is not None and cover.status is Status.PASSED and cover.total_cases:
            outcome = CheckOutcome(check, Status.PASSED, count, covered_by=cover.check)
            done += count
        else:
            await report(f"{check.name}: started")
            results: list[CaseResult] = []
            for index in range(count):
                if count > 1:
                    await report(f"{check.name}: case {index + 1} of {count} started")
                result = await daemon.run_case(check, index)
                results.append(result)
                done += 1
                if count > 1:
                    verdict = "passed" if result.passed else "FAILED"
                    await report(f"{check.name}: case {index + 1} of {count} {verdict}")
                if not result.passed and check.stop_at_first_failed_case:
                    break
            failed = any(not r.passed for r in results)
            status = Status.FAILED if failed else Status.PASSED
            outcome = CheckOutcome(check, status, count, tuple(results))
            await report(f"{check.name}: {status.value}")
            if failed and check.gate:
                blocker = check
        outcomes[check.key] = outcome
    return Outcome(level, tuple(outcomes[c.key] for c in enabled), withheld)


async def _failed_logs(daemon: Daemon, outcome: CheckOutcome) -> AsyncIterator[bytes]:
    """The check's log: what its failed cases printed, in order (for PoCs, the one that stopped)."""
    for case in outcome.cases:
        if not case.passed:
            async for chunk in daemon.log_chunks(case):
                yield chunk


async def _view_failed_log(daemon: Daemon, outcome: CheckOutcome, log_dir: Path) -> LogView:
    """The failed check's log as the report shows it: from local files when the daemon runs in
    this process (copied by the kernel, off the event loop), else streamed from the daemon."""
    files = daemon.open_local_logs([c for c in outcome.cases if not c.passed])
    if files is None:
        return await view_log(_failed_logs(daemon, outcome), log_dir)
    stop = threading.Event()
    try:
        return await asyncio.to_thread(view_log_files, files, log_dir, stop)
    finally:
        stop.set()  # cancelled: the thread stops at its next step and removes its file


async def run_test_patch(
    checks: Sequence[Check],
    level: int,
    daemon: Daemon,
    log_dir: Path,
    *,
    progress: Progress | None = None,
) -> str:
    """The whole of test_patch: run, fetch the headline check's log, render the report text.

    A daemon fault anywhere becomes the internal-failure text; the cause goes to our own log.
    """
    try:
        outcome = await run_checks(checks, level, daemon, progress=progress)
        failed = outcome.failed
        view = None
        if failed is not None:
            view = await _view_failed_log(daemon, failed, log_dir)
    except DaemonError as exc:
        log.error("internal testing failure: %s", exc)
        return INTERNAL_FAILURE
    except asyncio.CancelledError:
        raise
    return render(outcome, view)
