"""MCP sessions, bounded: a cap, and idle ones expire; the newest are always served.

Every `initialize` of a stateful Streamable HTTP session keeps a session (a task, its streams)
until its client deletes it: 3,000 never closed grew the server by 125 MB (red team, 12-04).
The MCP SDK can refuse a new session over a cap (503), which would lock a new agent out for as
long as old clients hold theirs. So here, when a new session would go over `cap`, the one
least recently used goes first (one with no request in flight, if any such is left): a client
that comes back to it is told 404, and the spec has it open a new session. Idle sessions also
expire after the SDK's `idle_timeout` (set where the app is made).

The session manager is fastmcp's, reached through its ASGI endpoint once the app has started;
its sessions are the SDK's `_server_instances` (fastmcp's own shutdown walks the same map).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

SESSION_HEADER = b"mcp-session-id"
MAX_SESSIONS = 64
IDLE_SECONDS = 1800.0  # the SDK's own default: an agent thinking for a while keeps its session


class BoundedSessions:
    """ASGI middleware over the MCP app: tracks each session's last use and evicts beyond
    `cap`. `endpoint` is the object whose `session_manager` holds the sessions."""

    def __init__(self, app: ASGIApp, endpoint: Any, *, cap: int = MAX_SESSIONS) -> None:
        self.app = app
        self.endpoint = endpoint
        self.cap = cap
        self.used: OrderedDict[str, float] = OrderedDict()  # least recently used first
        self.busy: dict[str, int] = {}  # requests in flight, by session

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        session = _header(scope, SESSION_HEADER)
        if session is None:
            await self._make_room()
            await self.app(scope, receive, self._learn(send))
            return
        self._touch(session)
        self.busy[session] = self.busy.get(session, 0) + 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.busy[session] -= 1
            if not self.busy[session]:
                del self.busy[session]

    def _touch(self, session: str) -> None:
        self.used[session] = time.monotonic()
        self.used.move_to_end(session)

    def _learn(self, send: Send) -> Send:
        """The response of a request that opens a session names it: from then on it counts."""

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", []):
                    if name.lower() == SESSION_HEADER:
                        self._touch(value.decode("latin-1"))
            await send(message)

        return watched

    async def _make_room(self) -> None:
        manager = getattr(self.endpoint, "session_manager", None)
        sessions: dict[str, Any] = getattr(manager, "_server_instances", {})
        for gone in [s for s in self.used if s not in sessions]:
            del self.used[gone]  # ended by its client, or expired
        while len(sessions) >= self.cap and sessions:
            idle = [s for s in self.used if s in sessions and not self.busy.get(s)]
            oldest = idle[0] if idle else next(iter(self.used), next(iter(sessions)))
            transport = sessions.get(oldest)
            self.used.pop(oldest, None)
            if transport is None:
                continue
            assert manager is not None
            await manager._discard_session(oldest, transport)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def mcp_endpoint(app: Any, path: str) -> Any:
    """The ASGI endpoint fastmcp serves `path` with (it carries the session manager)."""
    for route in getattr(app, "routes", []):
        if getattr(route, "path", None) == path:
            return route.endpoint
    raise LookupError(f"no route {path}")
