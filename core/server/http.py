"""Serving test_patch over HTTP: the sockets, the embedded or remote daemon, one signal loop.

`ssebench serve` binds its sockets before anything else (a port in use is one line), then runs
the MCP app and, with a task, the daemon app on the same event loop; one SIGINT or SIGTERM
stops both.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import uvicorn
from fastmcp import FastMCP
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from ssebench.core.daemons.connect import open_daemon, unsupported_warning
from ssebench.core.daemons.inprocess import attach
from ssebench.core.orchestrator import Daemon
from ssebench.core.registry import Registry
from ssebench.core.server.app import build_server
from ssebench.core.settings import PROGRESS_INTERVAL
from ssebench.daemon.app import create_app
from ssebench.daemon.task import Task

MCP_PATH = "/mcp"
STOP_GRACE = 1  # seconds a request may take to finish once we stop; a running call is cut


def create_http_app(mcp: FastMCP, *, allowed_hosts: Sequence[str] = ()) -> Starlette:
    """Streamable HTTP at /mcp with fastmcp's DNS-rebinding guard on (it is off by default):
    a foreign Origin gets 403, a foreign Host 421, on every route. /healthz answers once up."""

    @mcp.custom_route("/healthz", methods=["GET"])
    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    return mcp.http_app(
        path=MCP_PATH,
        host_origin_protection=True,
        allowed_hosts=list(allowed_hosts) or None,
    )


def bind(host: str, port: int) -> socket.socket:
    """Bind before serving, so a port in use is a one-line error and not a traceback."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Saying IPPROTO_TCP is what makes asyncio set TCP_NODELAY on the connections: without it
    # every small answer waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class _Server(uvicorn.Server):
    """uvicorn's server minus its own signal handling: one SIGINT or SIGTERM stops them all."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_test_patch(
    *,
    registry: Registry,
    level: int,
    log_dir: Path,
    task: Task | None,
    sockets: Sequence[socket.socket],
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
    apps: list[Starlette] = []
    async with contextlib.AsyncExitStack() as stack:
        daemon: Daemon
        if task is not None:
            app = create_app(task, registry, level)
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
            registry.checks, level, daemon, log_dir, progress_interval=progress_interval
        )
        apps.insert(0, create_http_app(mcp, allowed_hosts=allowed_hosts))
        await serve_all(apps, sockets, ready)


async def serve_all(
    apps: Sequence[Starlette], sockets: Sequence[socket.socket], ready: str
) -> None:
    """Run every app on its socket; one SIGINT or SIGTERM stops all of them together."""
    servers = [
        _Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=STOP_GRACE))
        for app in apps
    ]
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, _stop, servers)
    tasks = [
        asyncio.create_task(server.serve(sockets=[sock]))
        for server, sock in zip(servers, sockets, strict=True)
    ]
    while not all(server.started for server in servers):
        if any(task.done() for task in tasks):
            break
        await asyncio.sleep(0.02)
    else:
        print(ready, file=sys.stderr, flush=True)
    try:
        await asyncio.gather(*tasks)
    finally:
        _stop(servers)


def _stop(servers: Sequence[uvicorn.Server]) -> None:
    for server in servers:
        server.should_exit = True
