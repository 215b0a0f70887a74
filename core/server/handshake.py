"""Whether an MCP endpoint is up: one `initialize`, as a client's handshake opens, answered.

`ssebench run` waits on it before it starts the agent, and the tests and benchmarks wait on
it for the servers they start: one spelling of the question for all of them.
"""

from __future__ import annotations

import contextlib

import httpx


def initialize_request() -> dict[str, object]:
    """An MCP `initialize` offering the newest version the MCP SDK negotiates in a handshake,
    as its own client session does (its newest version of all, 2026-07-28 in mcp 2.3, has no
    handshake)."""
    # Imported here: the package takes about 0.5 s to load, which then overlaps the server's
    # own start instead of delaying it.
    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    return {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "ssebench-run", "version": "1"},
        },
    }


def answers_initialize(client: httpx.Client, url: str, wait: float | None = None) -> bool:
    """True once the endpoint completes an MCP handshake; the session is closed right after.
    `wait`: seconds the answer may take (default: the client's timeout)."""
    timeout = httpx.USE_CLIENT_DEFAULT if wait is None else httpx.Timeout(2.0, read=wait)
    try:
        response = client.post(
            url,
            json=initialize_request(),
            headers={"Accept": "application/json, text/event-stream"},
            timeout=timeout,
        )
    except httpx.HTTPError:
        return False
    if response.status_code != 200 or '"protocolVersion"' not in response.text:
        return False
    session = response.headers.get("mcp-session-id")
    if session:
        with contextlib.suppress(httpx.HTTPError):
            client.delete(url, headers={"mcp-session-id": session})
    return True
