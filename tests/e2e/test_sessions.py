"""MCP sessions are bounded: clients that `initialize` and never close (3,000 grew the server
by 125 MB, red team 12-04) cost nothing past the cap, the least recently used going first, and
the newest client is always served."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from ssebench.core.server.sessions import MAX_SESSIONS
from ssebench.testing.procs import proc_status
from ssebench.testing.servers import clean_env, start_server, write_task

pytestmark = pytest.mark.timeout(300)

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "never-closes", "version": "1"},
    },
}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


def opened(client: httpx.Client, url: str) -> str:
    """A new session, initialized and then left open."""
    response = client.post(url, json=INITIALIZE, headers=HEADERS)
    assert response.status_code == 200, response.text
    session = response.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    client.post(url, json=note, headers={**HEADERS, "mcp-session-id": session})
    return session


def tools(client: httpx.Client, url: str, session: str) -> int:
    headers = {**HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    response = client.post(url, json=LIST, headers=headers)
    if response.status_code == 200:
        body = response.text
        data = body.split("data: ", 1)[1] if "data: " in body else body
        assert [t["name"] for t in json.loads(data)["result"]["tools"]] == ["test_patch"]
    return response.status_code


def test_sessions_never_closed_cost_nothing_past_the_cap(tmp_path: Path) -> None:
    task = write_task(tmp_path / "task", '[checks.build]\nrun = "true"\n')
    server = start_server(tmp_path, ["--task", str(task)], env=clean_env(tmp_path))
    try:
        with httpx.Client(timeout=30) as client:
            first = [opened(client, server.url) for _ in range(MAX_SESSIONS)]
            assert tools(client, server.url, first[0]) == 200  # the oldest, used again now
            warm = proc_status(server.pid)["VmRSS"]
            later = [opened(client, server.url) for _ in range(1000)]
            grown = proc_status(server.pid)["VmRSS"] - warm
            newest = opened(client, server.url)
            assert tools(client, server.url, newest) == 200
            assert tools(client, server.url, later[-1]) == 200  # among the 64 newest
            assert tools(client, server.url, first[0]) == 404  # let go: it opens a new one
        print(f"\n1000 sessions past the cap of {MAX_SESSIONS}: the server grew {grown} kB")
        assert grown < 12 * 1024  # unbounded, 1000 sessions cost ~42 MB (125 MB per 3,000)
    finally:
        server.stop()
