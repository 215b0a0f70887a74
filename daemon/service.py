"""The daemon: one task's cases as a service, the one owner of its lock, policies, folders and
logs, between the orchestrator and the trusted core (daemon/confine).

In-process callers (`check`, `grade`, the testing kit, embedded `serve`) call it as the
orchestrator's `Daemon`; the HTTP app (daemon/app.py) is a thin adapter on it for a caller in
another process, and the only place a case's log path is dropped. It enforces the level itself,
whoever calls: a withheld check is `Withheld` whatever the case index, so its number of cases
cannot be probed. A call begins with its plan (its checks in order): the runner copy is brought
up to date once, every case of the call runs on that state (one call, one tree), and the
sandboxes of exactly the plan's cases are made ahead (daemon/confine/pool.py).
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
from ssebench.daemon.calls import Call, CallOver, Listed, NotFound, Withheld, refused_case
from ssebench.daemon.caseenv import case_environment
from ssebench.daemon.checktable import DEFAULT_TIMEOUT
from ssebench.daemon.config import ServiceConfig
from ssebench.daemon.confine.runner import RunnerError
from ssebench.daemon.place import CasePlace
from ssebench.daemon.policies import reads
from ssebench.daemon.runnercopy import SyncError, TreeRefused
from ssebench.daemon.sanitizers import exit_code

# Seconds with no case started after which a call that stopped early is taken to be over.
PAUSE = 0.1
# A log up to this size is judged in the event loop: searching it takes microseconds, where the
# hop to a worker thread and back costs 1-2 ms a case on a loaded machine (bench/RESULTS.md,
# issue 34). A larger one (up to a GiB) is searched in a thread, so the server keeps answering.
INLINE_JUDGE_BYTES = 64 * 1024


class CaseService:
    """The cases of `config.task` at `config.level`: see ServiceConfig."""

    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self.level = config.level
        self.place = CasePlace.open(config)
        self.task = self.place.task
        self.lock = asyncio.Lock()
        self.call: Call | None = None  # the call whose tree the runner copy holds
        self.plan: list[tuple[str, int]] = []  # its cases, in the order they may run
        self.runs = 0  # cases started: a guess made for a pause is dropped once one starts
        self._later: asyncio.Task[None] | None = None

    # --- the level's rules, for every caller ------------------------------------------------

    def listing(self) -> list[Listed]:
        """The checks that run at this level, in order, with their number of cases."""
        listed = []
        for check in self.config.registry.at_level(self.level).enabled:
            table = self.task.checks.get(check.key)
            cases, timeout = (len(table.cases), table.timeout) if table else (0, DEFAULT_TIMEOUT)
            listed.append(Listed(check, cases, timeout))
        return listed

    def check(self, key: str) -> Check:
        """The check `key` names, if the level runs it; decided before any index is read."""
        check = self.config.registry.by_key(key)
        if check is None:
            raise NotFound(f"no check {key!r}")
        if not check.runs_at(self.level):
            raise Withheld(f"{check.name}: not available at difficulty level {self.level}")
        return check

    # --- a call: its tree, its cases, its end ------------------------------------------------

    async def begin_call(self, keys: Sequence[str]) -> Call:
        """A call of the checks `keys`, in order: their cases' sandboxes asked for, the tree
        taken once. NotFound, Withheld; RunnerError when the machine fails the sync."""
        checks = [self.check(key) for key in keys]
        async with self.lock:
            tables = [self.task.checks.get(check.key) for check in checks]
            self.plan = [(t.check.key, i) for t in tables if t for i in range(len(t.cases))]
            await self._prepare(self.plan)  # made while the tree is taken
            return await self._take_tree()

    async def _take_tree(self) -> Call:
        refused = None
        try:
            await asyncio.to_thread(self.place.copy.sync)
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
            return await asyncio.to_thread(self.place.copy.changed)

    async def run_and_judge(self, check: Check, index: int, call: str | None = None) -> CaseRun:
        """Case `index` of `check` (as `check(key)` gave it), judged: on the tree of the call
        `call` names (CallOver once another began), or with None on the tree as it is now.
        NotFound; RunnerError when the command could not be started at all."""
        table = self.task.checks.get(check.key)
        if table is None or not 0 <= index < len(table.cases):
            raise NotFound(f"no case {index} of {check.name}")
        async with self.lock:
            current = await self._take_tree() if call is None else self._current(call)
            self.runs += 1
            log_id, log_path = self.place.spool.new(check.key, index)
            # A case that never ran was told no status (the record says null, as the docs do).
            sanitizer_exit = None if current.refused else exit_code(self.task, os.environ)
            if current.refused is not None:
                ended = refused_case(current.refused, log_path)
            else:
                command = table.cases[index]
                ended = await self._run(check.key, command, table.timeout, log_path, sanitizer_exit)
            run = replace(
                ended, log_path=log_path, options=table.options_of(index), key=check.key,
                index=index, log_id=log_id, log_size=log_path.stat().st_size,
                sanitizer_exit=sanitizer_exit,
            )  # fmt: skip
            if current.refused is not None:
                return run  # it never ran: failed, whatever its check's judge would say
            await self._coming_after(check.key, index)
            return replace(run, passed=await _judged(table.check, run))

    def _current(self, call: str) -> Call:
        if self.call is None or self.call.id != call:
            raise CallOver(f"call {call} is over: another call began since")
        return self.call

    async def run_command(
        self, key: str, command: str, *, timeout: float, log_path: Path
    ) -> CaseRun:
        """`command` as a case of check `key`, on the runner copy as it is, unjudged: the
        trusted core through this service, for the tests and benchmarks that give commands of
        their own."""
        async with self.lock:
            return await self._run(key, command, timeout, log_path, None)

    async def prepare(self, keys: Sequence[str]) -> None:
        """Have sandboxes made for coming cases of the checks `keys`, in order, as a call's
        plan has them made (tests and benchmarks ask directly)."""
        async with self.lock:
            await self._prepare([(key, 0) for key in keys])

    async def _run(
        self, key: str, command: str, timeout: float, log_path: Path, sanitizer_exit: int | None
    ) -> CaseRun:
        """The case through the trusted core, in its own folders, with its check's policy."""
        place = self.place
        folders = place.folders.take(key)
        policy = place.policies[key]
        env = case_environment(
            os.environ, self.task, place.tree.path, folders, place.user, place.roots,
            sanitizer_exit,
        )  # fmt: skip
        needs = reads(self.task, command, policy, place.policies)
        try:
            return await place.runner.run(
                command, policy, cwd=Path(place.tree.path), env=env, timeout=timeout,
                log_path=log_path, case_dir=Path(folders.root), reads=needs,
            )  # fmt: skip
        finally:
            place.folders.remove(folders)  # while the next case starts: none can reach it

    async def _coming_after(self, key: str, index: int) -> None:
        """The rest of the plan after this case is what comes; after its last, the next call's
        (the same plan). A call that stops early (a build that fails blocks the rest) is over
        once no case starts for PAUSE seconds: the next call's are asked for then."""
        rest = self.plan[self.plan.index((key, index)) + 1 :] if (key, index) in self.plan else []
        await self._prepare(rest or self.plan)
        if self._later is not None:
            self._later.cancel()  # not under way: it waits for the lock we hold, or sleeps
        if rest:
            self._later = asyncio.ensure_future(self._prepare_later(self.runs))

    async def _prepare_later(self, runs: int) -> None:
        await asyncio.sleep(PAUSE)
        async with self.lock:
            if self.runs == runs:  # no case started since: the call is over
                await self._prepare(self.plan)

    async def _prepare(self, cases: Sequence[tuple[str, int]]) -> None:
        """Have the sandboxes of `cases` (the first the pool holds) made while nothing runs,
        each in its case's own folders: those cases then start at once. A sandbox that cannot
        be made is said by the case that needed it."""
        place = self.place
        with contextlib.suppress(OSError):  # a folder not made: its case makes one
            coming = place.folders.ahead([key for key, _ in cases][: place.pool_size])
            wanted = [(place.policies[key], Path(folders.root)) for key, folders in coming]
            with contextlib.suppress(RunnerError):
                await place.runner.prepare(wanted)

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
        """The case's record whole: the orchestrator is in this process (only the HTTP adapter
        drops what only the daemon's judge reads)."""
        found = self.check(check.key)
        call = self.call.id if self.call is not None else None
        try:
            return await self.run_and_judge(found, index, call)
        except RunnerError as exc:
            raise DaemonError(str(exc)) from exc

    async def open_log(self, case: CaseRun) -> LogSource:
        """The case's spooled log, open: the tail rule reads it in place, and a long one is
        saved by the kernel. DaemonError when it is gone or not the size its run said."""
        path = case.log_path if case.log_path is not None else self.place.spool.path(case.log_id)
        if path is None:
            raise DaemonError(f"cannot read log {case.log_id}: no such log")
        try:
            return FileLog(path, case.log_size)
        except OSError as exc:
            raise DaemonError(f"cannot read log {case.log_id}: {exc}") from exc

    def log_path(self, log_id: str) -> Path:
        """The log a caller in another process names by its id (the HTTP API's)."""
        path = self.place.spool.path(log_id)
        if path is None:
            raise NotFound("no such log")
        return path

    def close(self) -> None:
        """End the cases' supervisor (it kills whatever still runs), remove our folders."""
        if self._later is not None and not self._later.done():
            with contextlib.suppress(RuntimeError):  # its loop is closed: it never runs
                self._later.cancel()
        self.place.close()

    async def aclose(self) -> None:
        """close(), once the stops of cancelled runs have finished (a server shutting down
        cancels its calls; their cases must be stopped, not dropped)."""
        if self._later is not None:
            self._later.cancel()  # no case will start: no guess is made
        await self.place.aclose()
        self.close()


async def _judged(check: Check, run: CaseRun) -> bool:
    """`check`'s verdict on `run`: a judge reads the record and searches the log."""
    if run.log_size <= INLINE_JUDGE_BYTES:
        return bool(check.judge(run))
    return bool(await asyncio.to_thread(check.judge, run))
