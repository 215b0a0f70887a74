"""The daemon's guard against DNS rebinding: a request that names another site is refused.

A web page the user opens could otherwise point a name it controls at 127.0.0.1 and start runs
or read logs. So, as the MCP server does: a Host that is not this daemon's gets 421, an Origin
from another site 403, both in the daemon's JSON error shape, before any route. This daemon's
names are the loopback ones, the address the request came in on (unless it is a wildcard), and
whatever `--allowed-host` adds (a container's name).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def _hostname(authority: str) -> str:
    """The host of a Host header or an Origin, lowercased, without port or brackets."""
    try:
        return urlsplit(authority if "//" in authority else f"//{authority}").hostname or ""
    except ValueError:  # a malformed port or bracket
        return ""


def _is_wildcard(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_unspecified
    except ValueError:
        return False


class HostGuard:
    """ASGI middleware: foreign Host 421, foreign Origin 403."""

    def __init__(self, app: ASGIApp, allowed_hosts: Sequence[str] = ()) -> None:
        self.app = app
        self.names = {*LOOPBACK_NAMES, *(_hostname(name) or name for name in allowed_hosts)}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self._refusal(scope) if scope["type"] == "http" else None
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, message = refusal
        await JSONResponse({"error": message}, status_code=status)(scope, receive, send)

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        names = set(self.names)
        server = scope.get("server")
        if server and not _is_wildcard(server[0]):
            names.add(_hostname(str(server[0])) or str(server[0]))
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if _hostname(host) not in names:
            return 421, f"Host {host!r} does not name this daemon (--allowed-host adds names)"
        origin = headers.get("origin")
        if origin is not None and _hostname(origin) not in names:
            return 403, f"requests from {origin!r} are refused"
        return None
