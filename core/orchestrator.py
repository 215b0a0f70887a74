"""Runs the enabled checks through a daemon by the rules the Check fields declare.

Build gate, PoC stop, intent-covers-functional: none is named here. A gate's failure blocks
every later check, `stop_at_first_failed_case` ends a check at its first failing case, and
`covered_by` lets a check pass unrun when the covering check really ran and passed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol

from ssebench.core.case import CaseRun
from ssebench.core.check import Check, CheckOutcome, Outcome, Status, split_by_level
from ssebench.core.logs import LogView, discard_view, in_worker, view_log
from ssebench.core.logsource import LogSource
from ssebench.core.report import internal_failure, render
from ssebench.core.savedlogs import Owner

# progress(done, total, message): cases finished so far of all the cases the call will run.
Progress = Callable[[float, float, str], Awaitable[None]]
STARTED = "started"  # the last word of a message that starts a case, which then runs
TREE_CHANGED = (
    "the source tree changed while this call ran: this result is for the tree as it was when "
    "the call began; call test_patch again to test the changes"
)


class Daemon(Protocol):
    """What the orchestrator needs from a daemon, whichever API it speaks and wherever it runs.

    Every fault is raised as `DaemonError`.
    """

    async def begin(self, plan: Sequence[Check]) -> dict[str, int | None]:
        """A call begins: the tree is taken as it is now, and every case of the call runs on
        that state (one call, one tree: the agent may go on editing while a call runs in the
        background). `plan` is the call's checks in the order they may run, whose cases the
        daemon prepares. Cases per check key; None for a check this daemon cannot run."""
        ...

    async def run_case(self, check: Check, index: int) -> CaseRun: ...

    async def open_log(self, case: CaseRun) -> LogSource:
        """The case's log, wherever it lies, read in a worker thread; the caller closes it."""
        ...

    async def tree_changed(self) -> bool:
        """Whether the agent's tree changed since the call began (its cases ran on the tree
        as it was then); False where the daemon cannot tell."""
        ...


class _Counter:
    """Cases done of the call's total, told to `progress` as each check and case goes."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress = progress
        self.total = total
        self.done = 0

    async def say(self, message: str) -> None:
        if self.progress is not None:
            await self.progress(self.done, self.total, message)


async def run_checks(
    checks: Iterable[Check],
    level: int | None,
    daemon: Daemon,
    *,
    coverage: bool = True,
    every_case: bool = False,
    progress: Progress | None = None,
) -> Outcome:
    """`level` None runs everything (the evaluator); `coverage` False runs covered checks too;
    `every_case` runs a check's cases past its first failure (a task's validation needs each
    case's verdict, not the first that fails)."""
    split = split_by_level(checks, level)
    counts = await daemon.begin(split.enabled) if split.enabled else {}
    counter = _Counter(progress, sum(n or 0 for n in counts.values()))
    outcomes: dict[str, CheckOutcome] = {}
    blocker: Check | None = None
    for check in split.enabled:
        count = counts[check.key]
        cover = outcomes.get(check.covered_by) if coverage and check.covered_by else None
        if blocker is not None:
            outcome = CheckOutcome(check, Status.NOT_RUN, count or 0, blocked_by=blocker)
        elif count is None:
            outcome = CheckOutcome(check, Status.NOT_RUN, unsupported=True)
        elif count and cover is not None and cover.status is Status.PASSED and cover.total_cases:
            outcome = CheckOutcome(check, Status.PASSED, count, covered_by=cover.check)
        else:
            stop = check.stop_at_first_failed_case and not every_case
            outcome = await _run_check(check, count, daemon, counter, stop=stop)
            if outcome.status is Status.FAILED and check.gate:
                blocker = check
        outcomes[check.key] = outcome
    if progress is not None and split.enabled and await daemon.tree_changed():
        await counter.say(TREE_CHANGED)
    return Outcome(level, tuple(outcomes[c.key] for c in split.enabled), split.withheld)


async def _run_check(
    check: Check, count: int, daemon: Daemon, counter: _Counter, *, stop: bool
) -> CheckOutcome:
    await counter.say(f"{check.name}: {STARTED}")
    cases: list[CaseRun] = []
    for index in range(count):
        if count > 1:
            await counter.say(f"{check.name}: case {index + 1} of {count} {STARTED}")
        case = await daemon.run_case(check, index)
        cases.append(case)
        counter.done += 1
        if count > 1:
            verdict = "passed" if case.passed else "FAILED"
            await counter.say(f"{check.name}: case {index + 1} of {count} {verdict}")
        if not case.passed and stop:
            break
    status = Status.FAILED if any(not case.passed for case in cases) else Status.PASSED
    await counter.say(f"{check.name}: {status.value}")
    return CheckOutcome(check, status, count, tuple(cases))


async def view_failed_log(
    daemon: Daemon, outcome: CheckOutcome, log_dir: Path, owner: Owner | None = None
) -> LogView:
    """The failed check's log as the report shows it: what its failed cases printed, in order
    (for PoCs, the one that stopped), read off the event loop; a long log is saved in
    `log_dir`, given to `owner` (the agent's user)."""
    sources: list[LogSource] = []
    try:
        for case in outcome.cases:
            if not case.passed:
                sources.append(await daemon.open_log(case))
    except BaseException:
        for source in sources:
            source.close()
        raise
    # From here the worker owns the sources (it closes them), even if this call is cancelled.
    return await in_worker(lambda stop: view_log(sources, log_dir, stop, owner), discard_view)


async def run_test_patch(
    checks: Iterable[Check],
    level: int,
    daemon: Daemon,
    log_dir: Path,
    *,
    progress: Progress | None = None,
    log_owner: Owner | None = None,
) -> str:
    """The whole of test_patch: run, fetch the headline check's log, render the report text
    (a long log saved in `log_dir`, given to `log_owner`, the agent's user).

    Any failure of testing itself becomes the internal-failure text, its cause in our own log.
    """
    try:
        outcome = await run_checks(checks, level, daemon, progress=progress)
        failed = outcome.failed
        view = None if failed is None else await view_failed_log(daemon, failed, log_dir, log_owner)
    except Exception as exc:
        return internal_failure(exc)
    return render(outcome, view)
