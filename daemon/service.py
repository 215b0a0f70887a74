"""The daemon's cases as a service: what the level lets run, one run at a time, judged, logged.

This is the daemon. In-process callers (`check`, `grade`, the testing kit, embedded `serve`)
call it as the orchestrator's `Daemon`; the HTTP app (daemon/app.py) is a thin adapter on it
for a daemon in another process. It enforces the level itself, whoever calls: a withheld
check is `Withheld` whatever the case index, so its number of cases cannot be probed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ssebench.core.case import CaseRun
from ssebench.core.check import Check
from ssebench.core.errors import DaemonError
from ssebench.core.logsource import FileLog, LogSource
from ssebench.core.registry import Registry
from ssebench.daemon.calls import Call, CallOver, Listed, NotFound, Withheld, refused_case
from ssebench.daemon.cases import Cases
from ssebench.daemon.confine.mechanism import Mechanism
from ssebench.daemon.confine.runner import LOG_LIMIT, RunnerError
from ssebench.daemon.guard import make_folder, remove_folder
from ssebench.daemon.runnercopy import SyncError, TreeRefused
from ssebench.daemon.sanitizers import exit_code
from ssebench.daemon.task import DEFAULT_TIMEOUT, Task

# Seconds with no case started after which a call that stopped early is taken to be over.
PAUSE = 0.1


class CaseService:
    """One task's cases at one level (None: the evaluator's, every check), confined by
    `mechanism`, run as `case_user` (None: one of their own), never able to read the spool nor
    `log_dir` (where the server saves logs). `tree`: a grade's scratch copy of the task's tree,
    which the cases run on as it is (else on a runner copy of the agent's tree); `take_over`:
    this daemon owns its fresh container, writable folders and all (daemon/writable.py)."""

    def __init__(
        self,
        task: Task,
        registry: Registry,
        level: int | None,
        *,
        spool: Path | None = None,
        mechanism: Mechanism | None = None,
        log_dir: Path | None = None,
        log_limit: int = LOG_LIMIT,
        case_user: str | None = None,
        tree: Path | None = None,
        take_over: bool = False,
    ) -> None:
        self.task = task
        self.registry = registry
        self.level = level
        self._own_spool = spool is None
        self.spool = make_folder("ssebench-logs-") if spool is None else spool
        hidden = [self.spool, *([log_dir] if log_dir is not None else [])]
        enabled = registry.at_level(level).enabled
        try:
            self.cases = Cases(task, enabled, hidden=hidden, mechanism=mechanism,
                               user=case_user, log_limit=log_limit, tree=tree,
                               take_over=take_over)  # fmt: skip
        except BaseException:
            if self._own_spool:
                remove_folder(self.spool)
            raise
        self.lock = asyncio.Lock()
        self.runs = 0  # cases started: a guess made for a pause is dropped once one starts
        self._later: asyncio.Task[None] | None = None
        self.logs: dict[str, Path] = {}
        self.latest: dict[tuple[str, int], str] = {}
        self.call: Call | None = None  # the call whose tree the runner copy holds

    # --- the level's rules, for every caller ------------------------------------------------

    def listing(self) -> list[Listed]:
        """The checks that run at this level, in order, with their number of cases."""
        listed = []
        for check in self.registry.at_level(self.level).enabled:
            table = self.task.checks.get(check.key)
            cases, timeout = (len(table.cases), table.timeout) if table else (0, DEFAULT_TIMEOUT)
            listed.append(Listed(check, cases, timeout))
        return listed

    def check(self, key: str) -> Check:
        """The check `key` names, if the level runs it; decided before any index is read."""
        check = self.registry.by_key(key)
        if check is None:
            raise NotFound(f"no check {key!r}")
        if not check.runs_at(self.level):
            raise Withheld(f"{check.name}: not available at difficulty level {self.level}")
        return check

    async def begin_call(self, keys: Sequence[str]) -> Call:
        """A call begins: the runner copy is brought up to date once (one call, one tree), and
        the call's cases run on that state. NotFound, Withheld for a key of `keys`; RunnerError
        when the machine fails the sync."""
        for key in keys:
            self.check(key)
        async with self.lock:
            return await self._sync()

    async def _sync(self) -> Call:
        refused = None
        try:
            await asyncio.to_thread(self.cases.copy.sync)
        except SyncError as exc:
            raise RunnerError(str(exc)) from exc
        except TreeRefused as exc:
            refused = exc
        self.call = Call(uuid.uuid4().hex, refused)
        return self.call

    async def tree_changed(self) -> bool:
        """Whether the agent changed its tree since the current call began."""
        if self.call is None or self.call.refused is not None:
            return False
        async with self.lock:
            return await asyncio.to_thread(self.cases.copy.changed)

    async def run_and_judge(self, key: str, index: int, call: str | None = None) -> CaseRun:
        """Case `index` of check `key`, judged: on the tree of the call `call` names (CallOver
        once another began), or with None on the tree as it is now. NotFound, Withheld;
        RunnerError when the command could not be started at all."""
        check = self.check(key)
        table = self.task.checks.get(key)
        if table is None or not 0 <= index < len(table.cases):
            raise NotFound(f"no case {index} of {check.name}")
        async with self.lock:
            current = self.call
            if call is None:
                current = await self._sync()
            elif current is None or current.id != call:
                raise CallOver(f"call {call} is over: another call began since")
            self.runs += 1
            log_id, log_path = self._new_log(key, index)
            if current.refused is not None:
                return refused_case(current.refused, key, index, log_id, log_path)
            sanitizer_exit = exit_code(self.task, os.environ)
            end = await self.cases.run(
                table.cases[index], key, timeout=table.timeout, log_path=log_path,
                sanitizer_exit=sanitizer_exit,
            )  # fmt: skip
            run = CaseRun(
                exit_code=end.exit_code,
                signal=end.signal,
                timed_out=end.timed_out,
                seconds=end.seconds,
                log_path=log_path,
                options=table.options_of(index),
                key=key,
                index=index,
                log_id=log_id,
                log_size=log_path.stat().st_size,
                killed=end.killed,
                dropped=end.dropped,
                sanitizer_exit=sanitizer_exit,
            )
            await self._prepare(key, index)
            passed = await asyncio.to_thread(table.check.judge, run)
            return replace(run, passed=bool(passed))

    async def _prepare(self, key: str, index: int) -> None:
        """Have the coming cases' sandboxes made (daemon/confine/pool.py): a call runs each
        check's cases in the level's order, so after this case come the rest of that order,
        and after the last the next call's, all of them. A call that stops early (a build
        that fails blocks the rest) is over once no case starts for PAUSE seconds: the next
        call's are made then. Between two cases of a call nothing else is made."""
        calls = [(listed.check.key, i) for listed in self.listing() for i in range(listed.cases)]
        order = [check for check, _ in calls]
        rest = order[calls.index((key, index)) + 1 :] if (key, index) in calls else []
        with contextlib.suppress(OSError):  # a guess without a folder: its case makes one
            await self.cases.prepare(rest or order)
        if self._later is not None:
            self._later.cancel()  # not under way: it waits for the lock we hold, or sleeps
        if rest:
            self._later = asyncio.ensure_future(self._prepare_later(order, self.runs))

    async def _prepare_later(self, order: list[str], runs: int) -> None:
        await asyncio.sleep(PAUSE)
        async with self.lock:
            if self.runs == runs:  # no case started since: the call is over
                with contextlib.suppress(OSError):  # a guess without a folder: see above
                    await self.cases.prepare(order)

    def _new_log(self, key: str, index: int) -> tuple[str, Path]:
        """A new spooled log for the case, replacing its last one (only the newest is kept)."""
        log_id = uuid.uuid4().hex
        old = self.latest.pop((key, index), None)
        if old is not None:
            with contextlib.suppress(OSError):  # gone with its folder, say
                self.logs.pop(old).unlink(missing_ok=True)
        # A temp cleaner may have removed the spool of a long-lived daemon: make it again, or
        # every later run would fail to open its log.
        try:
            self.spool.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunnerError(f"cannot make the log folder {self.spool}: {exc}") from exc
        path = self.logs[log_id] = self.spool / f"{log_id}.log"
        self.latest[key, index] = log_id
        return log_id, path

    def log_path(self, log_id: str) -> Path:
        path = self.logs.get(log_id)
        if path is None or not path.exists():
            raise NotFound("no such log")
        return path

    # --- the orchestrator's Daemon, in this process -------------------------------------------

    async def begin(self, plan: Sequence[Check]) -> dict[str, int | None]:
        counts = {listed.check.key: listed.cases for listed in self.listing()}
        missing = [check.key for check in plan if check.key not in counts]
        if missing:
            raise DaemonError(f"the daemon does not offer {', '.join(missing)}")
        try:
            await self.begin_call([check.key for check in plan])
        except RunnerError as exc:
            raise DaemonError(str(exc)) from exc
        return {check.key: counts[check.key] for check in plan}

    async def run_case(self, check: Check, index: int) -> CaseRun:
        call = self.call.id if self.call is not None else None
        try:
            run = await self.run_and_judge(check.key, index, call)
        except RunnerError as exc:
            raise DaemonError(str(exc)) from exc
        # As the wire would give it: what only the daemon's judge reads stays in the daemon.
        return run.off_the_daemon()

    async def open_log(self, case: CaseRun) -> LogSource:
        """The case's spooled log, open: the tail rule reads it in place, and a long one is
        saved by the kernel. DaemonError when it is gone or not the size its run said."""
        try:
            return FileLog(self.log_path(case.log_id), case.log_size)
        except OSError as exc:
            raise DaemonError(f"cannot read log {case.log_id}: {exc}") from exc

    def close(self) -> None:
        """End the cases' supervisor (it kills whatever still runs) and remove our spool."""
        if self._later is not None and not self._later.done():
            with contextlib.suppress(RuntimeError):  # its loop is closed: it never runs
                self._later.cancel()
        self.cases.close()
        if self._own_spool:
            remove_folder(self.spool)

    async def aclose(self) -> None:
        """close(), once the stops of cancelled runs have finished (a server shutting down
        cancels its calls; their cases must be stopped, not dropped)."""
        if self._later is not None:
            self._later.cancel()  # no case will start: no guess is made
        await self.cases.aclose()
        self.close()
