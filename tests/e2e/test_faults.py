"""Every daemon fault returns exactly the internal-failure text, and the next call recovers.

The server runs in sidecar mode against the real daemon app behind a switch that breaks it
the ways a daemon breaks. Its time limits are shortened (a prelude sets the client's
constants) so that a daemon that never answers fails the call in seconds, not minutes.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastmcp
import pytest
import uvicorn
from starlette.responses import PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from ssebench.core.registry import build_registry
from ssebench.core.report import INTERNAL_FAILURE
from ssebench.daemon.app import create_app
from ssebench.daemon.task import load_task

from .conftest import check_text, clean_env, free_port, make_task, start_server

pytestmark = pytest.mark.timeout(180)

SHORT_TIMEOUTS = (
    "import ssebench.core.client as c; c.RUN_MARGIN = 1.0; c.CONNECT_TIMEOUT = 2.0; "
    "c.QUERY_TIMEOUT = 1.0"
)


class FaultyDaemon:
    """The real daemon app, unless `fault` says how to break."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.fault: str | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        fault = self.fault if scope["type"] == "http" else None
        if fault == "5xx" and path.endswith("/run"):
            await PlainTextResponse("upstream exploded", status_code=502)(scope, receive, send)
        elif fault == "500-checks" and path == "/v1/checks":
            await PlainTextResponse("Internal Server Error", status_code=500)(scope, receive, send)
        elif fault == "malformed" and path == "/v1/checks":
            await Response('{"checks": [{"key": "build",', media_type="application/json")(
                scope, receive, send
            )
        elif fault == "wrong-shape" and path.endswith("/run"):
            await Response('{"passed": "maybe"}', media_type="application/json")(
                scope, receive, send
            )
        elif (fault == "hang" and path.endswith("/run")) or (
            fault == "hang-checks" and path == "/v1/checks"
        ):
            while (await receive())["type"] != "http.disconnect":
                pass
        elif fault == "cut-log" and path.startswith("/v1/logs/"):
            headers = [(b"content-length", b"100000"), (b"content-type", b"text/plain")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b"partial log", "more_body": True})
            raise ConnectionResetError("the daemon dropped the connection mid-log")
        else:
            await self.app(scope, receive, send)


class Sidecar:
    """The faulty daemon served by uvicorn in a thread; it can be started late."""

    def __init__(self, task: Path, port: int) -> None:
        registry = build_registry()
        self.app = FaultyDaemon(create_app(load_task(task, registry.checks), registry, 2))
        self.port = port
        self.server: uvicorn.Server | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        config = uvicorn.Config(self.app, port=self.port, log_level="critical")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)

    def stop(self) -> None:
        if self.server is not None and self.thread is not None:
            self.server.should_exit = True
            self.thread.join(10)


@pytest.fixture(scope="module")
def sidecar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sidecar, Any, str]]:
    tmp = tmp_path_factory.mktemp("faults")
    task = make_task(tmp / "task", "failing")
    env = clean_env(tmp)
    expected = check_text(task, 2, env)
    daemon = Sidecar(task, free_port())
    server = start_server(
        tmp,
        ["--daemon-url", f"http://127.0.0.1:{daemon.port}", "--difficulty", "2"],
        env=env,
        prelude=SHORT_TIMEOUTS,
        embedded=False,
    )
    try:
        yield daemon, server, expected
    finally:
        server.stop()
        daemon.stop()


def _call(url: str) -> str:
    async def call() -> str:
        async with fastmcp.Client(url) as client:
            result = await client.call_tool_mcp("test_patch", {}, timeout=60)
            assert [block.type for block in result.content] == ["text"]
            return result.content[0].text

    return asyncio.run(call())


FAULTS = ["5xx", "500-checks", "malformed", "wrong-shape", "hang", "hang-checks", "cut-log"]


def test_unreachable_daemon_then_back(sidecar: tuple[Sidecar, Any, str]) -> None:
    daemon, server, expected = sidecar
    assert _call(server.url) == INTERNAL_FAILURE
    assert "internal testing failure" in server.stderr()
    assert "ConnectError" in server.stderr()
    daemon.start()
    assert _call(server.url) == expected


@pytest.mark.parametrize("fault", FAULTS)
def test_daemon_fault_then_recovery(sidecar: tuple[Sidecar, Any, str], fault: str) -> None:
    daemon, server, expected = sidecar
    if daemon.server is None:
        daemon.start()
    logged = len(server.stderr())
    daemon.app.fault = fault
    try:
        assert _call(server.url) == INTERNAL_FAILURE
    finally:
        daemon.app.fault = None
    cause = server.stderr()[logged:]
    print(f"\n{fault}: {cause.strip()}")
    assert "internal testing failure" in cause, cause
    assert INTERNAL_FAILURE not in cause
    assert _call(server.url) == expected
    assert server.proc.poll() is None
