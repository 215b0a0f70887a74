"""Serving test_patch over HTTP: the MCP app with its guard, beside the daemon's own API.

`ssebench serve` binds its sockets before anything else (core/server/listen.py: a port in use
is one line), then runs the MCP app and, with a task, the daemon's API on the same event loop;
one SIGINT or SIGTERM stops both. The MCP app calls the daemon as objects, never over HTTP.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fastmcp import FastMCP
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp

from ssebench.core.check import Check
from ssebench.core.orchestrator import Daemon
from ssebench.core.savedlogs import Owner
from ssebench.core.server.app import OnCall, build_server
from ssebench.core.server.listen import serve_all
from ssebench.core.server.quiet import quiet_when_gone
from ssebench.core.server.sessions import IDLE_SECONDS, MAX_SESSIONS, BoundedSessions, mcp_endpoint
from ssebench.core.settings import PROGRESS_INTERVAL

MCP_PATH = "/mcp"


def create_http_app(
    mcp: FastMCP, *, allowed_hosts: Sequence[str] = (), max_sessions: int = MAX_SESSIONS
) -> ASGIApp:
    """Streamable HTTP at /mcp with fastmcp's DNS-rebinding guard on (it is off by default):
    a foreign Origin gets 403, a foreign Host 421, on every route. /healthz answers once up.
    A client that closes its session mid-request is no error (core/server/quiet.py). At most
    `max_sessions` sessions, the least recently used going first; idle ones expire
    (core/server/sessions.py)."""

    @mcp.custom_route("/healthz", methods=["GET"])
    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    app = mcp.http_app(
        path=MCP_PATH,
        host_origin_protection=True,
        allowed_hosts=list(allowed_hosts) or None,
        session_idle_timeout=IDLE_SECONDS,
    )
    bounded = BoundedSessions(app, mcp_endpoint(app, MCP_PATH), cap=max_sessions)
    return quiet_when_gone(bounded)


@dataclass(frozen=True)
class Serving:
    """What `serve` serves: test_patch for these checks at this level, long logs saved in
    `log_dir` for `log_owner` (the agent's user), progress at least every interval, each answer
    handed to `on_call`."""

    checks: tuple[Check, ...]
    level: int
    log_dir: Path
    log_owner: Owner | None = None
    progress_interval: float = PROGRESS_INTERVAL
    allowed_hosts: Sequence[str] = ()
    on_call: OnCall | None = None


async def serve_test_patch(
    serving: Serving,
    daemon: Daemon,
    sockets: Sequence[socket.socket],
    *,
    daemon_app: ASGIApp | None = None,
    ready: str = "",
) -> None:
    """Serve MCP on sockets[0], its calls run through `daemon` (the case service in this
    process, or a daemon at an address); and `daemon_app`, the daemon's own API on the same
    service, on sockets[1] for callers in other processes. One SIGINT or SIGTERM stops both."""
    mcp = build_server(
        serving.checks,
        serving.level,
        daemon,
        serving.log_dir,
        progress_interval=serving.progress_interval,
        log_owner=serving.log_owner,
        on_call=serving.on_call,
    )
    apps = [create_http_app(mcp, allowed_hosts=serving.allowed_hosts)]
    await serve_all([*apps, *([daemon_app] if daemon_app is not None else [])], sockets, ready)
