"""The daemon's HTTP app: runs cases of the checks the level allows, and serves their logs.

It enforces the level itself, so an agent calling it directly learns nothing the level
withholds: a withheld check answers 403 for every route under it and is absent from the list.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from ssebench.core.case import CaseRun, case_to_wire
from ssebench.core.check import Check
from ssebench.core.protocol import API_PREFIX, CheckInfo, CheckList, Health
from ssebench.core.registry import Registry
from ssebench.daemon.cases import Cases
from ssebench.daemon.guard import make_folder, remove_folder
from ssebench.daemon.hosts import HostGuard
from ssebench.daemon.isolation import Mechanism
from ssebench.daemon.runner import LOG_LIMIT, RunnerError
from ssebench.daemon.task import DEFAULT_TIMEOUT, Task

log = logging.getLogger("ssebench.daemon")


_INDEX = re.compile(r"[0-9]+")
# Every method, so that no request under a withheld check answers anything but 403.
_ANY_METHOD = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


_HANDLERS = {
    404: lambda request, exc: _error(404, "no such route"),
    405: lambda request, exc: _error(405, "method not allowed"),
}


class Daemon:
    """State behind the routes: one run at a time, and the newest log of each case."""

    def __init__(
        self, task: Task, registry: Registry, level: int | None, spool: Path, cases: Cases
    ) -> None:
        self.task = task
        self.registry = registry
        self.level = level
        self.spool = spool
        self.cases = cases
        self.lock = asyncio.Lock()
        self.logs: dict[str, Path] = {}
        self.latest: dict[tuple[str, int], str] = {}

    def _withheld(self, check: Check) -> JSONResponse:
        return _error(403, f"{check.name}: not available at difficulty level {self.level}")

    async def health(self, request: Request) -> Response:
        return JSONResponse(Health(status="ok", difficulty=self.level).model_dump())

    async def checks(self, request: Request) -> Response:
        infos = []
        for check in self.registry.at_level(self.level).enabled:
            table = self.task.checks.get(check.key)
            infos.append(
                CheckInfo(
                    key=check.key,
                    name=check.name,
                    cases=len(table.cases) if table else 0,
                    timeout=table.timeout if table else DEFAULT_TIMEOUT,
                )
            )
        return JSONResponse(CheckList(checks=infos).model_dump())

    async def run_case(self, request: Request) -> Response:
        key = request.path_params["key"]
        check = self.registry.by_key(key)
        if check is None:
            return _error(404, f"no check {key!r}")
        if not check.runs_at(self.level):
            # Decided before the index is even read, so the number of cases cannot be probed.
            return self._withheld(check)
        table = self.task.checks.get(key)
        raw_index = request.path_params["index"]
        # ASCII digits only: str.isdigit() also takes "²" (which int() refuses) and "١".
        if table is None or not _INDEX.fullmatch(raw_index) or int(raw_index) >= len(table.cases):
            return _error(404, f"no case {raw_index} of {check.name}")
        index = int(raw_index)
        run = asyncio.create_task(self._run(key, index))
        gone = asyncio.create_task(_disconnected(request))
        done, _ = await asyncio.wait({run, gone}, return_when=asyncio.FIRST_COMPLETED)
        if run not in done:
            run.cancel()
            with contextlib.suppress(BaseException):
                await run
            return _error(499, "the client went away; the run was stopped")
        gone.cancel()
        try:
            answer = run.result()
        except RunnerError as exc:
            log.error("%s", exc)
            return _error(500, str(exc))
        return JSONResponse(case_to_wire(answer))

    async def _run(self, key: str, index: int) -> CaseRun:
        table = self.task.checks[key]
        async with self.lock:
            log_id = uuid.uuid4().hex
            log_path = self.spool / f"{log_id}.log"
            old = self.latest.pop((key, index), None)
            if old is not None:
                with contextlib.suppress(OSError):  # gone with its folder, say
                    self.logs.pop(old).unlink(missing_ok=True)
            self.logs[log_id] = log_path
            self.latest[(key, index)] = log_id
            # A temp cleaner may have removed the spool of a long-lived daemon: make it again,
            # or every later run would fail to open its log.
            try:
                self.spool.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise RunnerError(f"cannot make the log folder {self.spool}: {exc}") from exc
            finished = await self.cases.run(
                table.cases[index], timeout=table.timeout, log_path=log_path
            )
            run = replace(
                finished,
                options=table.options_of(index),
                key=key,
                index=index,
                log_id=log_id,
                log_size=log_path.stat().st_size,
            )
            passed = await asyncio.to_thread(table.check.judge, run)
            return replace(run, passed=bool(passed))

    async def other(self, request: Request) -> Response:
        """Anything else under a check: still 403 when withheld, so no route probes it."""
        check = self.registry.by_key(request.path_params["key"])
        if check is not None and not check.runs_at(self.level):
            return self._withheld(check)
        return _error(404, "no such route")

    def routes(self) -> list[Route]:
        under = f"{API_PREFIX}/checks/{{key}}"
        return [
            Route(f"{API_PREFIX}/health", self.health),
            Route(f"{API_PREFIX}/checks", self.checks),
            Route(f"{under}/cases/{{index}}/run", self.run_case, methods=["POST"]),
            Route(under, self.other, methods=_ANY_METHOD),
            Route(f"{under}/{{rest:path}}", self.other, methods=_ANY_METHOD),
            Route(f"{API_PREFIX}/logs/{{log_id}}", self.log),
        ]

    def log_path(self, log_id: str) -> Path | None:
        """Where a log is spooled: for the route, and for a server in this same process, which
        then reads it from disk instead of over HTTP (HttpDaemon's `local_logs`)."""
        return self.logs.get(log_id)

    async def log(self, request: Request) -> Response:
        path = self.log_path(request.path_params["log_id"])
        if path is None or not path.exists():
            return _error(404, "no such log")
        return FileResponse(path, media_type="application/octet-stream")


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def spool_lookup(app: Starlette) -> Callable[[str], Path | None]:
    """Where an app made by `create_app` spooled each log: for a client in this same process."""
    daemon: Daemon = app.state.daemon
    return daemon.log_path


def create_app(
    task: Task,
    registry: Registry,
    level: int | None,
    *,
    spool: Path | None = None,
    mechanism: Mechanism | None = None,
    log_dir: Path | None = None,
    log_limit: int = LOG_LIMIT,
    allowed_hosts: Sequence[str] = (),
) -> Starlette:
    """`level` None is the evaluator's daemon: every check the task has runs.

    Cases run confined by `mechanism` (None: unconfined) and may not read the spool, nor
    `log_dir`, where the server saves long logs. Requests naming another site are refused
    (daemon/hosts.py); `allowed_hosts` adds names to this daemon's. The app's lifespan ends its
    cases' supervisor and removes the spool it made.
    """
    owned = spool is None
    spool_dir = make_folder("ssebench-logs-") if spool is None else spool
    hidden = [spool_dir, *([log_dir] if log_dir is not None else [])]
    enabled = registry.at_level(level).enabled
    cases = Cases(task, enabled, hidden=hidden, mechanism=mechanism, log_limit=log_limit)
    daemon = Daemon(task, registry, level, spool_dir, cases)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            cases.close()
            if owned:
                remove_folder(spool_dir)

    app = Starlette(
        routes=daemon.routes(),
        lifespan=lifespan,
        exception_handlers=_HANDLERS,
        middleware=[Middleware(HostGuard, allowed_hosts=allowed_hosts)],
    )
    app.state.daemon = daemon
    return app
