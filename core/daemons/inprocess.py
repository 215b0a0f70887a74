"""Our daemon in this very process: `ssebench check`, `grade`, the testing kit, and `serve`.

No HTTP in between: the case service (daemon/service.py) is the orchestrator's `Daemon`
itself, so a cancelled call is a cancelled coroutine (the runner stops the case's processes),
and a failed check's long log is saved from the spool by the kernel.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from starlette.types import ASGIApp

from ssebench.core.registry import Registry
from ssebench.daemon.confine.mechanism import Mechanism
from ssebench.daemon.service import CaseService
from ssebench.daemon.task import Task, load_task


def open_service(
    task: Task,
    registry: Registry,
    level: int | None,
    *,
    spool: Path | None = None,
    mechanism: Mechanism | None = None,
    log_dir: Path | None = None,
    log_limit: int | None = None,
    case_user: str | None = None,
    tree: Path | None = None,
    take_over: bool = False,
) -> CaseService:
    """The one place a daemon is made: the case service for `task` at `level` (the caller
    closes it). `spool` given is the caller's; else the service makes (and removes) its own.
    `tree`: a grade's scratch copy of the task's tree, run on as it is; `take_over`: the
    daemon owns its fresh container (the task's writable folders are taken as they are)."""
    limit = {} if log_limit is None else {"log_limit": log_limit}
    return CaseService(
        task, registry, level, spool=spool, mechanism=mechanism, log_dir=log_dir,
        case_user=case_user, tree=tree, take_over=take_over, **limit,
    )  # fmt: skip


@contextlib.asynccontextmanager
async def local_daemon(
    task: Task | Path,
    registry: Registry,
    level: int | None,
    *,
    mechanism: Mechanism | None = None,
    log_dir: Path | None = None,
    case_user: str | None = None,
    tree: Path | None = None,
    take_over: bool = False,
) -> AsyncIterator[CaseService]:
    """The case service for `task` (a loaded task, or the path of one) at `level`, its cases
    confined by `mechanism`, run as `case_user` and never seeing `log_dir`; closed
    afterwards."""
    if isinstance(task, Path):
        task = load_task(task, registry.checks)
    service = open_service(
        task, registry, level, mechanism=mechanism, log_dir=log_dir, case_user=case_user,
        tree=tree, take_over=take_over,
    )  # fmt: skip
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
