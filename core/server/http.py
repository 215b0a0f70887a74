"""Serving test_patch over HTTP: the MCP app with its guard, and the embedded or remote daemon.

`ssebench serve` binds its sockets before anything else (core/server/listen.py: a port in use
is one line), then runs the MCP app and, with a task, the daemon app on the same event loop;
one SIGINT or SIGTERM stops both.
"""

from __future__ import annotations

import contextlib
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

import httpx
from fastmcp import FastMCP
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp

from ssebench.core.daemons.connect import open_daemon, unsupported_warning
from ssebench.core.daemons.inprocess import attach
from ssebench.core.orchestrator import Daemon
from ssebench.core.registry import Registry
from ssebench.core.server.app import build_server
from ssebench.core.server.listen import serve_all
from ssebench.core.server.quiet import quiet_when_gone
from ssebench.core.settings import PROGRESS_INTERVAL
from ssebench.daemon.app import create_app
from ssebench.daemon.credentials import log_owner
from ssebench.daemon.isolation import Mechanism
from ssebench.daemon.task import Task

MCP_PATH = "/mcp"


def create_http_app(mcp: FastMCP, *, allowed_hosts: Sequence[str] = ()) -> ASGIApp:
    """Streamable HTTP at /mcp with fastmcp's DNS-rebinding guard on (it is off by default):
    a foreign Origin gets 403, a foreign Host 421, on every route. /healthz answers once up.
    A client that closes its session mid-request is no error (core/server/quiet.py)."""

    @mcp.custom_route("/healthz", methods=["GET"])
    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    app = mcp.http_app(
        path=MCP_PATH,
        host_origin_protection=True,
        allowed_hosts=list(allowed_hosts) or None,
    )
    return quiet_when_gone(app)


async def serve_test_patch(
    *,
    registry: Registry,
    level: int,
    log_dir: Path,
    task: Task | None,
    sockets: Sequence[socket.socket],
    mechanism: Mechanism | None = None,
    daemon_api: str = "auto",
    daemon_url: str | None = None,
    allowed_hosts: Sequence[str] = (),
    progress_interval: float = PROGRESS_INTERVAL,
    ready: str = "",
) -> None:
    """Serve MCP on sockets[0] and, with a task, our daemon on sockets[1] (loopback); without
    one, talk to the daemon `open_daemon` finds (sidecar mode, our API or the upstream one).

    One process, one loop: the embedded daemon is reached over real HTTP all the same, so a
    cancelled call closes its request and the daemon kills the case's process group.
    """
    apps: list[ASGIApp] = []
    async with contextlib.AsyncExitStack() as stack:
        daemon: Daemon
        if task is not None:
            app = create_app(task, registry, level, mechanism=mechanism, log_dir=log_dir)
            apps.append(app)
            host, port = sockets[1].getsockname()[:2]
            client = httpx.AsyncClient(  # plain HTTP: no TLS context to load at start
                base_url=f"http://{host}:{port}", trust_env=False, verify=False
            )
            daemon = attach(app, await stack.enter_async_context(client))
        else:
            remote = await stack.enter_async_context(open_daemon(daemon_api, daemon_url))
            print(f"ssebench: daemon: {remote.description}", file=sys.stderr, flush=True)
            if names := remote.unsupported(registry.checks):
                print(f"ssebench: warning: {unsupported_warning(names)}", file=sys.stderr)
            daemon = remote
        mcp = build_server(
            registry.checks,
            level,
            daemon,
            log_dir,
            progress_interval=progress_interval,
            log_owner=None if task is None else log_owner(task.source),
        )
        apps.insert(0, create_http_app(mcp, allowed_hosts=allowed_hosts))
        await serve_all(apps, sockets, ready)
