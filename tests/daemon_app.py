"""A daemon of its own behind its HTTP API, for tests that speak the API (as `ssebench daemon`
does): the case service made where every daemon is made, closed with the app."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette

from ssebench.core.daemons.inprocess import open_service
from ssebench.core.registry import Registry
from ssebench.daemon.app import http_app
from ssebench.daemon.config import ServiceConfig
from ssebench.daemon.task import Task


def create_app(
    task: Task, registry: Registry, level: int | None, *, allowed_hosts: Any = (), **options: Any
) -> Starlette:
    service = open_service(ServiceConfig(task, registry, level, **options))
    return http_app(service, allowed_hosts=allowed_hosts, owned=True)
