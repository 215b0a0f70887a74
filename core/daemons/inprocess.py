"""Our daemon app in this very process: `ssebench check`, `grade`, the testing kit, and `serve`.

`local_daemon` reaches the daemon app over its real HTTP API without a port, through a
transport that streams answers; `attach` gives a client for an app this process also serves
on a socket (embedded `serve`). Either way a failed check's log is read from the spool.

httpx's own ASGITransport collects the whole body before answering and never tells the app
that the client went away. The in-process daemon needs both: a 1 GiB log must pass through in
bounded memory, and a cancelled call must reach the daemon as `http.disconnect`, so it stops
the running command's process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette

from ssebench.core.daemons.native import HttpDaemon
from ssebench.core.registry import Registry
from ssebench.daemon.app import create_app, spool_lookup
from ssebench.daemon.guard import disown_folder, own_folder
from ssebench.daemon.task import Task, load_task

_QUEUE_CHUNKS = 8  # at most this many body chunks wait for the reader


def attach(app: Starlette, client: httpx.AsyncClient) -> HttpDaemon:
    """A client of `app`, which runs in this process: logs are read from its spool."""
    return HttpDaemon(client, local_logs=spool_lookup(app))


@contextlib.asynccontextmanager
async def local_daemon(
    task: Path | Task, registry: Registry, level: int | None
) -> AsyncIterator[HttpDaemon]:
    """Our daemon app in-process, reached over the same HTTP API without a port.

    `task` is a task folder (or its task.toml), or a task already loaded: a grade's runs on a
    pristine copy of the source are the task with its `source` replaced.
    """
    if not isinstance(task, Task):
        task = load_task(task, registry.checks)
    with tempfile.TemporaryDirectory(prefix="ssebench-spool-") as spool:
        own_folder(Path(spool))  # gone even if we are killed
        try:
            app = create_app(task, registry, level, spool=Path(spool))
            transport = StreamingASGITransport(app)
            async with httpx.AsyncClient(transport=transport, base_url="http://daemon") as client:
                yield attach(app, client)
        finally:
            disown_folder(Path(spool))


class StreamingASGITransport(httpx.AsyncBaseTransport):
    def __init__(self, app: Any) -> None:
        self.app = app

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = b"".join([part async for part in request.stream])  # type: ignore[union-attr]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": request.url.scheme,
            "path": request.url.path,
            "raw_path": request.url.raw_path.split(b"?")[0],
            "query_string": request.url.query,
            "root_path": "",
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "server": (request.url.host, request.url.port or 80),
            "client": ("127.0.0.1", 0),
        }
        chunks: asyncio.Queue[bytes | None] = asyncio.Queue(_QUEUE_CHUNKS)
        started: asyncio.Future[tuple[int, list[tuple[bytes, bytes]]]] = (
            asyncio.get_running_loop().create_future()
        )
        disconnected = asyncio.Event()
        sent_body = False

        async def receive() -> dict[str, Any]:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                started.set_result((message["status"], list(message.get("headers", []))))
            elif message["type"] == "http.response.body":
                if message.get("body"):
                    await chunks.put(message["body"])
                if not message.get("more_body", False):
                    await chunks.put(None)

        async def call_app() -> None:
            try:
                await self.app(scope, receive, send)
            finally:
                if not started.done():
                    started.set_exception(httpx.RemoteProtocolError("the app sent no answer"))
                with contextlib.suppress(asyncio.QueueFull):
                    chunks.put_nowait(None)

        task = asyncio.create_task(call_app())
        try:
            status, headers = await asyncio.shield(started)
        except BaseException:
            # The caller gave up (cancelled, timed out): tell the app, as a closed socket would.
            disconnected.set()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(task), 5)
            raise
        return httpx.Response(
            status, headers=headers, stream=_Body(chunks, task, disconnected), request=request
        )


class _Body(httpx.AsyncByteStream):
    def __init__(
        self, chunks: asyncio.Queue[bytes | None], task: asyncio.Task[None], gone: asyncio.Event
    ) -> None:
        self.chunks = chunks
        self.task = task
        self.gone = gone

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while (chunk := await self.chunks.get()) is not None:
            yield chunk
        if self.task.done() and self.task.exception() is not None:
            raise httpx.ReadError(f"the app failed: {self.task.exception()!r}")

    async def aclose(self) -> None:
        self.gone.set()
        # Drain so an app blocked on a full queue can finish, then let it end.
        while not self.task.done():
            with contextlib.suppress(asyncio.QueueEmpty):
                self.chunks.get_nowait()
            await asyncio.sleep(0)
            await asyncio.wait({self.task}, timeout=0.01)
        with contextlib.suppress(BaseException):
            self.task.result()
