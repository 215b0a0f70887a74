"""The daemon's HTTP app: a thin adapter on the case service, for a caller in another process.

The service (daemon/service.py) enforces the level, so an agent calling this app directly
learns nothing the level withholds: a withheld check answers 403 for every route under it,
whatever the rest of the path, and is absent from the list.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from ssebench.core.protocol import (
    API_PREFIX,
    CallAnswer,
    CallRequest,
    CallState,
    CheckInfo,
    CheckList,
    Health,
    case_to_wire,
)
from ssebench.daemon.calls import CallOver, NotFound, Withheld
from ssebench.daemon.confine.runner import RunnerError
from ssebench.daemon.hosts import HostGuard
from ssebench.daemon.service import CaseService

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
Handler = Callable[[Request], Awaitable[Response]]


def _refusals(handler: Handler) -> Handler:
    """The service's refusals as the API's statuses: 403 withheld, 404 not found."""

    async def route(request: Request) -> Response:
        try:
            return await handler(request)
        except Withheld as exc:
            return _error(403, str(exc))
        except NotFound as exc:
            return _error(404, str(exc))
        except CallOver as exc:
            return _error(409, str(exc))

    return route


class _LogResponse(FileResponse):
    """A log, read 1 MiB at a time: each read is a hop to a worker thread, and a 1 GiB log in
    Starlette's 64 KiB reads made the daemon, not the network, a sidecar's limit. A `Range`
    request gets that part alone (206): a client reads a long log's head and end so."""

    chunk_size = 1 << 20


def routes(service: CaseService) -> list[Route]:
    """The /v1 API on `service`."""

    async def health(request: Request) -> Response:
        return JSONResponse(Health(status="ok", difficulty=service.level).model_dump())

    async def checks(request: Request) -> Response:
        return JSONResponse(CheckList(checks=_infos(service)).model_dump())

    async def run_case(request: Request) -> Response:
        key, raw = request.path_params["key"], request.path_params["index"]
        check = service.check(key)  # a withheld check is refused before the index is read
        # ASCII digits only: str.isdigit() also takes "²" (which int() refuses) and "١".
        if not _INDEX.fullmatch(raw):
            return _error(404, f"no case {raw} of {check.name}")
        call = request.query_params.get("call")  # none: on the tree as it is now
        return await _run_until_gone(request, service.run_and_judge(check, int(raw), call))

    async def other(request: Request) -> Response:
        """Anything else under a check: still 403 when withheld, so no route probes it."""
        with contextlib.suppress(NotFound):
            service.check(request.path_params["key"])  # Withheld goes on, to a 403
        return _error(404, "no such route")

    async def logs(request: Request) -> Response:
        path = service.log_path(request.path_params["log_id"])
        return _LogResponse(path, media_type="application/octet-stream")

    under = f"{API_PREFIX}/checks/{{key}}"
    return [
        Route(f"{API_PREFIX}/health", _refusals(health)),
        Route(f"{API_PREFIX}/checks", _refusals(checks)),
        *_call_routes(service),
        Route(f"{under}/cases/{{index}}/run", _refusals(run_case), methods=["POST"]),
        Route(under, _refusals(other), methods=_ANY_METHOD),
        Route(f"{under}/{{rest:path}}", _refusals(other), methods=_ANY_METHOD),
        Route(f"{API_PREFIX}/logs/{{log_id}}", _refusals(logs)),
    ]


def _infos(service: CaseService, keys: list[str] | None = None) -> list[CheckInfo]:
    """The checks that run at this level (those of `keys`, in that order), as the API lists
    them."""
    listed = {one.check.key: one for one in service.listing()}
    return [
        CheckInfo(key=one.check.key, name=one.check.name, cases=one.cases, timeout=one.timeout)
        for one in (listed.values() if keys is None else (listed[key] for key in keys))
    ]


def _call_routes(service: CaseService) -> list[Route]:
    """A call begins (its tree taken once, for every run that names it), and says whether the
    agent changed its tree since."""

    async def begin(request: Request) -> Response:
        try:
            plan = CallRequest.model_validate_json(await request.body())
        except ValidationError:
            return _error(400, 'the body must be {"checks": [check keys, in order]}')
        try:
            call = await service.begin_call(plan.checks)
        except RunnerError as exc:
            log.error("%s", exc)
            return _error(500, str(exc))
        answer = CallAnswer(call=call.id, checks=_infos(service, plan.checks))
        return JSONResponse(answer.model_dump())

    async def state(request: Request) -> Response:
        call = request.path_params["call"]
        if service.call is None or service.call.id != call:
            raise CallOver(f"call {call} is over: another call began since")
        changed = await service.tree_changed()
        return JSONResponse(CallState(call=call, changed=changed).model_dump())

    return [
        Route(f"{API_PREFIX}/calls", _refusals(begin), methods=["POST"]),
        Route(f"{API_PREFIX}/calls/{{call}}", _refusals(state)),
    ]


async def _run_until_gone(request: Request, job: Awaitable[Any]) -> Response:
    """The run's answer; a client that goes away first stops it (and its processes)."""
    run = asyncio.ensure_future(job)
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


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def http_app(
    service: CaseService, *, allowed_hosts: Sequence[str] = (), owned: bool = False
) -> Starlette:
    """The API on `service`. Requests naming another site are refused (daemon/hosts.py);
    `allowed_hosts` adds names to this daemon's. An `owned` service is closed with the app."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if owned:
                await service.aclose()

    return Starlette(
        routes=routes(service),
        lifespan=lifespan,
        exception_handlers=_HANDLERS,
        middleware=[Middleware(HostGuard, allowed_hosts=allowed_hosts)],
    )
