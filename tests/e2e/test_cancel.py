"""A call given up in any way ends the running case within 2 s: every process it started.

The task's build hangs while a flag file exists, leaving a background child in the case's process
group (its shell leads a session of its own). Each test gives the call up its own way, measures
from that instant until no live process of the group is left, then removes the flag and checks
that the next call answers normally.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import fastmcp
import httpx
import mcp
import pytest

from ssebench.core.server.app import CLIENT_LEFT
from ssebench.core.server.quiet import STOPPED_OPEN
from ssebench.testing.calls import call
from ssebench.testing.procs import wait_group_gone
from ssebench.testing.servers import check_text

from .tasks import read_pgid

pytestmark = pytest.mark.timeout(120)

LIMIT = 2.0
LEGACY = "2025-03-26"  # before resumable streams: dropping the POST is all such a client can do
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def _pgid(server: Any) -> int:
    return await asyncio.to_thread(read_pgid, server.env)


async def _gone(pgid: int, since: float) -> float:
    return await asyncio.to_thread(wait_group_gone, pgid, since, LIMIT)


def _given_up(server: Any, give_up: Callable[[Any], Awaitable[float]]) -> float:
    """Run one way of giving up on a hanging call; then the next call must answer normally."""
    task = server.task
    expected = check_text(task, 2, server.env)  # while the flag is absent: the normal answer
    (server.tree / "pgid").unlink(missing_ok=True)
    (task / "src" / "hang").touch()
    try:
        latency = asyncio.run(give_up(server))
    finally:
        (task / "src" / "hang").unlink()
    print(f"\n{give_up.__name__}: process group gone {latency:.3f} s after the call was given up")

    assert call(server.url, timeout=30) == expected
    return latency


@pytest.fixture(scope="module")
def server(shared_servers: Any) -> Any:
    return shared_servers("switch", 2)


async def call_cancelled_legacy(server: Any) -> float:
    """Handshake-era client: cancelling its call sends notifications/cancelled."""
    async with fastmcp.Client(server.url, mode="legacy") as client:
        call = asyncio.create_task(client.call_tool_mcp("test_patch", {}, timeout=60))
        pgid = await _pgid(server)
        since = time.monotonic()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        return await _gone(pgid, since)


async def request_timeout_legacy(server: Any) -> float:
    async with mcp.Client(server.url, mode="legacy") as client:
        started = time.monotonic()
        timeout = 3.0
        with pytest.raises(mcp.MCPError):
            await client.call_tool("test_patch", {}, read_timeout_seconds=timeout)
        pgid = await _pgid(server)
        return await _gone(pgid, started + timeout)


async def stream_closed_modern(server: Any) -> float:
    """Protocol 2026-07-28: closing the call's response stream is its cancellation."""
    async with fastmcp.Client(server.url, mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        call = asyncio.create_task(client.call_tool_mcp("test_patch", {}))
        pgid = await _pgid(server)
        since = time.monotonic()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        return await _gone(pgid, since)


async def request_timeout_modern(server: Any) -> float:
    async with mcp.Client(server.url) as client:
        started = time.monotonic()
        timeout = 3.0
        with pytest.raises(mcp.MCPError):
            await client.call_tool("test_patch", {}, read_timeout_seconds=timeout)
        pgid = await _pgid(server)
        return await _gone(pgid, started + timeout)


async def _legacy_session(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "old-client", "version": "0"},
        },
    }
    answer = await http.post(url, json=init, headers=ACCEPT)
    headers = {**ACCEPT, "mcp-session-id": answer.headers["mcp-session-id"]}
    headers["mcp-protocol-version"] = LEGACY
    await http.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    return headers


CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test_patch"}}


async def session_closed(server: Any) -> float:
    """DELETE of the session while its call runs."""
    async with httpx.AsyncClient(timeout=60) as http:
        headers = await _legacy_session(http, server.url)
        async with http.stream("POST", server.url, json=CALL, headers=headers) as stream:
            assert stream.status_code == 200
            pgid = await _pgid(server)
            since = time.monotonic()
            await http.delete(server.url, headers=headers)
            return await _gone(pgid, since)


async def post_stream_dropped(server: Any) -> float:
    """An older client gives up by dropping the POST stream; fastmcp would let the run go on."""
    async with httpx.AsyncClient(timeout=60) as http:
        headers = await _legacy_session(http, server.url)
        async with http.stream("POST", server.url, json=CALL, headers=headers) as stream:
            assert stream.status_code == 200
            pgid = await _pgid(server)
            since = time.monotonic()
        return await _gone(pgid, since)  # the session itself stays open


CLIENT_SCRIPT = """
import asyncio, sys, fastmcp
async def main():
    async with fastmcp.Client(sys.argv[1], mode=sys.argv[2]) as client:
        await client.call_tool_mcp("test_patch", {})
asyncio.run(main())
"""


def _client_killed(mode: str) -> Callable[[Any], Awaitable[float]]:
    async def client_process_killed(server: Any) -> float:
        proc = subprocess.Popen(
            [sys.executable, "-c", CLIENT_SCRIPT, server.url, mode], stderr=subprocess.DEVNULL
        )
        try:
            pgid = await _pgid(server)
            since = time.monotonic()
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait()
        return await _gone(pgid, since)

    client_process_killed.__name__ = f"client_process_killed_{mode}"
    return client_process_killed


WAYS = [
    call_cancelled_legacy,
    request_timeout_legacy,
    stream_closed_modern,
    request_timeout_modern,
    session_closed,
    post_stream_dropped,
    _client_killed("legacy"),
    _client_killed("auto"),
]


@pytest.mark.parametrize("give_up", WAYS, ids=[way.__name__ for way in WAYS])
def test_given_up_call_kills_the_group_and_the_next_call_works(
    server: Any, give_up: Callable[[Any], Awaitable[float]]
) -> None:
    """A client that gives up is a normal event: at most one informational line."""
    before = len(server.stderr().splitlines())
    assert _given_up(server, give_up) < LIMIT
    assert server.stderr().splitlines()[before:] in ([], [f"ssebench: {CLIENT_LEFT}"])
    assert "Traceback" not in server.stderr()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_server_stopped_mid_call_kills_the_group_quietly(serve: Any, sig: signal.Signals) -> None:
    """SIGTERM to the server (what `ssebench run` sends once the agent ends), or Ctrl+C at a
    terminal, stops the case, and says so in one line: no traceback (there were ~140 lines)."""
    server = serve("switch", 2)
    (server.task / "src" / "hang").touch()

    async def call() -> None:
        async with fastmcp.Client(server.url) as client:
            await client.call_tool_mcp("test_patch", {})

    def calling() -> None:
        with contextlib.suppress(Exception):
            asyncio.run(call())

    caller = threading.Thread(target=calling, daemon=True)
    caller.start()
    pgid = read_pgid(server.env)
    since = time.monotonic()
    server.proc.send_signal(sig)
    latency = wait_group_gone(pgid, since, limit=LIMIT)
    print(f"\nserver stopped: process group gone {latency:.3f} s after its {sig.name}")
    assert server.proc.wait(10) == 0
    lines = server.stderr().splitlines()
    ready = next(i for i, line in enumerate(lines) if line.startswith("ssebench: serving "))
    assert lines[ready + 1 :] == [STOPPED_OPEN]
