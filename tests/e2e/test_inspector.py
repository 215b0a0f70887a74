"""The MCP Inspector's CLI, a client we did not write, lists and calls test_patch.

Needs npx and the npm registry; skipped with the reason when the Inspector cannot be
installed within two minutes. Its CLI gives up on a call after 60 s, so the task is short.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import fastmcp
import pytest

from ssebench.testing.servers import check_text

pytestmark = pytest.mark.timeout(300)

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
INSTALL_SECONDS = 120


@pytest.fixture(scope="module")
def npx() -> str:
    found = shutil.which("npx")
    if found is None:
        pytest.skip("npx is not installed, so the MCP Inspector CLI cannot run")
    npm = shutil.which("npm") or "npm"
    try:
        # Installs into npx's cache without starting the Inspector.
        done = subprocess.run(
            [npm, "exec", "--yes", f"--package={INSPECTOR}", "--", "node", "-e", "0"],
            capture_output=True,
            text=True,
            timeout=INSTALL_SECONDS,
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"installing {INSPECTOR} took over {INSTALL_SECONDS} s (npm unreachable?)")
    if done.returncode != 0:
        errors = [
            line.removeprefix("npm error ").strip()
            for line in done.stderr.splitlines()
            if line.startswith("npm error") and "complete log" not in line
        ]
        reason = "; ".join(errors[:2]) or f"npm exited {done.returncode}"
        pytest.skip(f"cannot install {INSPECTOR} with npm: {reason}")
    return found


def _inspect(npx: str, url: str, *method: str) -> Any:
    done = subprocess.run(
        [npx, "-y", INSPECTOR, "--cli", url, "--transport", "http", "--method", *method],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_inspector_lists_and_calls_test_patch(npx: str, shared_servers: Any) -> None:
    server = shared_servers("failing", 2)
    listed = _inspect(npx, server.url, "tools/list")
    assert [tool["name"] for tool in listed["tools"]] == ["test_patch"]
    assert listed["tools"][0]["annotations"]["readOnlyHint"] is False  # it saves logs
    called = _inspect(npx, server.url, "tools/call", "--tool-name", "test_patch")
    assert called["content"] == [{"type": "text", "text": check_text(server.task, 2, server.env)}]
    assert "structuredContent" not in called
    assert called.get("isError") is False


@contextlib.contextmanager
def recording_proxy(port: int) -> Iterator[tuple[int, bytearray]]:
    """A TCP relay to 127.0.0.1:`port`; yields its own port and every byte clients sent."""
    seen = bytearray()
    listener = socket.create_server(("127.0.0.1", 0))

    def pipe(source: socket.socket, sink: socket.socket, record: bool) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if record:
                    seen.extend(data)
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = listener.accept()
                upstream = socket.create_connection(("127.0.0.1", port))
                for args in ((client, upstream, True), (upstream, client, False)):
                    threading.Thread(target=pipe, args=args, daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1], seen
    finally:
        listener.close()


def test_the_inspector_asks_for_no_progress(npx: str, shared_servers: Any) -> None:
    """docs/clients.md: its CLI sends no progressToken, so no heartbeat keeps it waiting past
    its 60 s. A client that asks, through the same relay, is seen asking."""
    server = shared_servers("failing", 2)
    with recording_proxy(server.port) as (port, seen):
        _inspect(npx, f"http://127.0.0.1:{port}/mcp", "tools/call", "--tool-name", "test_patch")
    assert b'"tools/call"' in seen and b"progressToken" not in seen

    async def asking(url: str) -> None:
        async with fastmcp.Client(url) as client:
            await client.call_tool_mcp("test_patch", {}, progress_handler=lambda *_: _noop())

    with recording_proxy(server.port) as (port, seen):
        asyncio.run(asking(f"http://127.0.0.1:{port}/mcp"))
    assert b"progressToken" in seen


async def _noop() -> None:
    return None
