"""Our daemon in this very process: `ssebench check`, `grade`, the testing kit, and `serve`.

No HTTP in between: the case service (daemon/service.py) is the orchestrator's `Daemon`
itself, so a cancelled call is a cancelled coroutine (the runner stops the case's processes),
and a failed check's long log is saved from the spool by the kernel.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

from starlette.types import ASGIApp

from ssebench.daemon.config import ServiceConfig
from ssebench.daemon.service import CaseService


def open_service(config: ServiceConfig) -> CaseService:
    """The one place a daemon is made: the case service `config` describes (the caller closes
    it)."""
    return CaseService(config)


@contextlib.asynccontextmanager
async def local_daemon(config: ServiceConfig) -> AsyncIterator[CaseService]:
    """The case service `config` describes, closed afterwards."""
    service = open_service(config)
    try:
        yield service
    finally:
        await service.aclose()


def http_adapter(daemon: object, *, allowed_hosts: Sequence[str] = ()) -> ASGIApp | None:
    """The /v1 HTTP API on `daemon` when it is our case service (embedded `serve` offers it on
    its daemon port to callers in other processes); None for a daemon found at an address."""
    if not isinstance(daemon, CaseService):
        return None
    from ssebench.daemon.app import http_app

    return http_app(daemon, allowed_hosts=allowed_hosts)
