"""A client that closes its session while a notification of it is still being handled (as one
that exits right after `initialize` does, on a loaded machine) is a normal event: the MCP app
logs nothing above info and raises nothing. The real app, driven here through ASGI so that the
DELETE lands exactly where the race puts it: after the notification's 202 is sent, before the
SDK hands the notification to the session (whose streams the DELETE closed). On a real server
the same race shows under load (tests/e2e/test_quiet_server.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from ssebench.core.daemons.door import ServiceConfig, load_task
from ssebench.core.daemons.inprocess import local_daemon
from ssebench.core.server.app import build_server
from ssebench.core.server.http import create_http_app
from ssebench.testing import TaskHandle

Message = dict[str, Any]
ACCEPT = "application/json, text/event-stream"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "quits-at-once", "version": "1"},
    },
}


@contextlib.asynccontextmanager
async def lifespan(app: Any) -> AsyncIterator[None]:
    """The app's lifespan, as uvicorn runs it: the MCP session manager lives within it."""
    inbox: asyncio.Queue[Message] = asyncio.Queue()
    started = asyncio.Event()

    async def send(message: Message) -> None:
        if message["type"] == "lifespan.startup.complete":
            started.set()

    await inbox.put({"type": "lifespan.startup"})
    running = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}},
                                      inbox.get, send))  # fmt: skip
    await asyncio.wait_for(started.wait(), 10)
    try:
        yield
    finally:
        await inbox.put({"type": "lifespan.shutdown"})
        await asyncio.wait_for(running, 10)


async def request(
    app: Any,
    method: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    on_start: Callable[[Message], Awaitable[None]] | None = None,
) -> list[Message]:
    """One HTTP request through the app; what it sent. A send after the response completed
    raises, as uvicorn's does."""
    given = {"host": "127.0.0.1:3000", "accept": ACCEPT, "content-type": "application/json"}
    given.update(headers or {})
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 3000),
        "headers": [(k.encode(), v.encode()) for k, v in given.items()],
    }  # fmt: skip
    data = b"" if body is None else json.dumps(body).encode()
    sent: list[Message] = []
    delivered = False

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": data, "more_body": False}
        await asyncio.Event().wait()  # the client stays connected
        raise AssertionError

    async def send(message: Message) -> None:
        done = any(m["type"] == "http.response.body" and not m.get("more_body") for m in sent)
        if done:
            raise RuntimeError(f"Unexpected ASGI message {message['type']!r} sent, after "
                               "response already completed.")  # fmt: skip
        sent.append(message)
        if message["type"] == "http.response.start" and on_start is not None:
            await on_start(message)

    await app(scope, receive, send)
    return sent


def test_a_session_closed_while_its_notification_is_handled_is_quiet(
    ssebench_task: Callable[..., TaskHandle], caplog: pytest.LogCaptureFixture
) -> None:
    task = ssebench_task({"build": "true"})

    async def main() -> list[Message]:
        config = ServiceConfig(load_task(task.path, task.registry.checks), task.registry, 2)
        async with local_daemon(config) as daemon:
            app = create_http_app(build_server(task.registry.checks, 2, daemon, task.log_dir))
            async with lifespan(app):
                answer = await request(app, "POST", INITIALIZE)
                session = dict(answer[0]["headers"])[b"mcp-session-id"].decode()
                headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}

                async def client_leaves(start: Message) -> None:
                    if start["status"] == 202:  # the notification's answer is on its way
                        await request(app, "DELETE", headers=headers)

                notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                return await request(app, "POST", notification, headers, client_leaves)

    caplog.set_level(logging.INFO)
    sent = asyncio.run(main())
    assert [m.get("status") for m in sent if m["type"] == "http.response.start"] == [202]
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert loud == [], [r.getMessage() for r in loud]
