"""Every daemon fault returns exactly the internal-failure text, and the next call recovers.

The MCP server (in memory, through fastmcp's client) talks over real HTTP, in sidecar mode, to
the real daemon app behind a switch that breaks it the ways a daemon breaks. Its client is
given short time limits, so that a daemon that never answers fails the call in seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastmcp
import pytest
from daemon_app import create_app
from starlette.responses import PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from ssebench.core.daemons.base import Timeouts
from ssebench.core.daemons.connect import open_daemon
from ssebench.core.registry import build_registry
from ssebench.core.report import INTERNAL_FAILURE
from ssebench.core.server.app import build_server
from ssebench.daemon.task import load_task
from ssebench.testing.calls import tool_text
from ssebench.testing.servers import check_text, clean_env, free_port, serving_app

from ..tasks import make_task

pytestmark = pytest.mark.timeout(180)

SHORT_TIMEOUTS = Timeouts(connect=2.0, query=1.0, run_margin=1.0)


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
        elif fault == "500-checks" and path == "/v1/calls":
            await PlainTextResponse("Internal Server Error", status_code=500)(scope, receive, send)
        elif fault == "malformed" and path == "/v1/calls":
            await Response('{"checks": [{"key": "build",', media_type="application/json")(
                scope, receive, send
            )
        elif fault == "wrong-shape" and path.endswith("/run"):
            await Response('{"passed": "maybe"}', media_type="application/json")(
                scope, receive, send
            )
        elif (fault == "hang" and path.endswith("/run")) or (
            fault == "hang-checks" and path == "/v1/calls"
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
        self.started = False
        self._running = contextlib.ExitStack()

    def start(self) -> None:
        self._running.enter_context(serving_app(self.app, port=self.port, log_level="critical"))
        self.started = True

    def stop(self) -> None:
        self._running.close()


class Server:
    """test_patch in memory, its daemon client at the sidecar's port; its log kept as lines."""

    def __init__(self, port: int, log_dir: Path) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.log_dir = log_dir
        self.lines: list[str] = []

    def stderr(self) -> str:
        return "".join(f"{line}\n" for line in self.lines)

    def call(self) -> str:
        handler = _Collect(self.lines)
        logger = logging.getLogger("ssebench")
        logger.addHandler(handler)
        try:
            return asyncio.run(self._call())
        finally:
            logger.removeHandler(handler)

    async def _call(self) -> str:
        registry = build_registry()
        async with open_daemon("native", self.url, timeouts=SHORT_TIMEOUTS) as daemon:
            mcp = build_server(registry.checks, 2, daemon, self.log_dir)
            async with fastmcp.Client(mcp) as client:
                return await tool_text(client, timeout=60)


class _Collect(logging.Handler):
    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def sidecar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sidecar, Server, str]]:
    tmp = tmp_path_factory.mktemp("faults")
    task = make_task(tmp / "task", "failing")
    env = clean_env(tmp)
    expected = check_text(task, 2, env)
    daemon = Sidecar(task, free_port())
    try:
        yield daemon, Server(daemon.port, Path(env["MCP_LOG_DIR"])), expected
    finally:
        daemon.stop()


FAULTS = ["5xx", "500-checks", "malformed", "wrong-shape", "hang", "hang-checks", "cut-log"]


def test_unreachable_daemon_then_back(sidecar: tuple[Sidecar, Server, str]) -> None:
    daemon, server, expected = sidecar
    assert server.call() == INTERNAL_FAILURE
    assert "internal testing failure" in server.stderr()
    assert "ConnectError" in server.stderr()
    daemon.start()
    assert server.call() == expected


@pytest.mark.parametrize("fault", FAULTS)
def test_daemon_fault_then_recovery(sidecar: tuple[Sidecar, Server, str], fault: str) -> None:
    daemon, server, expected = sidecar
    if not daemon.started:
        daemon.start()
    logged = len(server.stderr())
    daemon.app.fault = fault
    try:
        assert server.call() == INTERNAL_FAILURE
    finally:
        daemon.app.fault = None
    cause = server.stderr()[logged:]
    print(f"\n{fault}: {cause.strip()}")
    assert "internal testing failure" in cause, cause
    assert INTERNAL_FAILURE not in cause
    assert server.call() == expected
