"""The MCP edge: one tool, test_patch, that runs the orchestrator and returns its report text.

Calls are serialized by one lock, so two calls never run on the tree at once, while tools/list
and everything else is still answered. A call is stopped when its client cancels it
(notifications/cancelled, a client timeout, closing the session), and also when the HTTP
request carrying it goes away (a closed stream at protocol 2026-07-28, a dropped POST stream
from an older client, a client process that died). Stopping closes the request to the daemon,
which kills the case's whole process group; the lock is held until the run has unwound, so the
next call starts on a quiet tree.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from importlib.metadata import version
from pathlib import Path

import anyio
import httpx
import uvicorn
from fastmcp import Context, FastMCP
from fastmcp.server.dependencies import get_http_request
from mcp.types import ToolAnnotations
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from ssebench.core.check import Check
from ssebench.core.client import Daemon, HttpDaemon
from ssebench.core.connect import open_daemon, unsupported_warning
from ssebench.core.orchestrator import run_test_patch
from ssebench.core.registry import Registry
from ssebench.core.report import INTERNAL_FAILURE
from ssebench.daemon.app import create_app
from ssebench.daemon.task import Task

log = logging.getLogger("ssebench")

MCP_PATH = "/mcp"
LEFT_POLL_SECONDS = 0.5
UNWIND_SECONDS = 5.0
STOP_GRACE = 1  # seconds a request may take to finish once we stop; a running call is cut
ANNOTATIONS = ToolAnnotations(
    title="Test the patch",
    read_only_hint=True,  # it builds in the tree but never changes the agent's source
    destructive_hint=False,
    idempotent_hint=True,
    open_world_hint=False,
)


def describe(checks: Sequence[Check], level: int) -> str:
    """The tool's description: what it checks at this level, and that a call takes long."""
    enabled = (
        ", ".join(
            check.name for check in sorted(checks, key=lambda c: c.order) if check.runs_at(level)
        )
        or "no checks at all"
    )
    return (
        "Test the current state of the task's source tree, including every uncommitted change "
        f"you made. At this difficulty level ({level}) it runs: {enabled}. The result lists how "
        "each check ended and shows the log of the failed check. Takes no arguments. A call "
        "runs a full build and test cycle and can take a long time; allow a generous timeout. "
        "Progress is reported as each check starts and ends."
    )


def build_server(checks: Sequence[Check], level: int, daemon: Daemon, log_dir: Path) -> FastMCP:
    """The FastMCP server with its one tool; the daemon may be any `Daemon` (tests pass fakes)."""
    mcp = FastMCP("ssebench", version=version("ssebench"))  # else serverInfo names fastmcp's
    lock = asyncio.Lock()

    @mcp.tool(
        name="test_patch",
        description=describe(checks, level),
        annotations=ANNOTATIONS,
        output_schema=None,  # text content only: a structured copy would change what clients show
    )
    async def test_patch(ctx: Context) -> str:
        async with lock:
            progress = _progress_sender(ctx)
            run = asyncio.create_task(
                run_test_patch(checks, level, daemon, log_dir, progress=progress)
            )
            left = asyncio.create_task(_client_left())
            try:
                await asyncio.wait({run, left}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                left.cancel()
                if not run.done():
                    run.cancel()  # closes the daemon request: the daemon kills the case's group
                    with anyio.CancelScope(shield=True):
                        # Hold the lock until the run has unwound, so runs never overlap.
                        await asyncio.wait({run}, timeout=UNWIND_SECONDS)
            if not run.done() or run.cancelled():
                log.warning("test_patch: the client dropped the call's stream; its run was stopped")
                return INTERNAL_FAILURE  # nobody is left to read it
            if run.exception() is not None:
                # The orchestrator already turns daemon faults into the text; anything else is
                # our bug, and the agent must still get the spec's answer while we keep serving.
                log.error("internal testing failure", exc_info=run.exception())
                return INTERNAL_FAILURE
            return run.result()

    @mcp.custom_route("/healthz", methods=["GET"])
    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    return mcp


async def _client_left() -> None:
    """Return once the HTTP request carrying this call is gone; without HTTP, never.

    At protocol 2026-07-28 a closed stream already cancels the call. Before it, fastmcp keeps
    running a call whose client dropped the POST stream (an old client's only way to give up,
    or a client process that died). We keep no event store, so such a client can never resume
    and read the result: stopping the run is the only useful thing, and it frees the tree.
    """
    try:
        request = get_http_request()
        while not await request.is_disconnected():
            await asyncio.sleep(LEFT_POLL_SECONDS)
    except Exception:
        # No HTTP request (in-memory clients), or one we cannot watch: only a cancel stops it.
        await asyncio.Event().wait()


def _progress_sender(ctx: Context) -> Callable[[float, float | None, str], Awaitable[None]]:
    """MCP progress must increase with every notification; the orchestrator's count of finished
    cases repeats between a check's end and the next start, so each repeat adds a tenth."""
    last = -1.0

    async def send(done: float, total: float | None, message: str) -> None:
        nonlocal last
        last = float(done) if done > last else round(last + 0.1, 1)
        with contextlib.suppress(Exception):  # a client that left must not fail the run
            await ctx.report_progress(last, total, message)

    return send


def create_http_app(mcp: FastMCP, *, allowed_hosts: Sequence[str] = ()) -> Starlette:
    """Streamable HTTP at /mcp with fastmcp's DNS-rebinding guard on (it is off by default):
    a foreign Origin gets 403, a foreign Host 421, on every route."""
    return mcp.http_app(
        path=MCP_PATH,
        host_origin_protection=True,
        allowed_hosts=list(allowed_hosts) or None,
    )


def bind(host: str, port: int) -> socket.socket:
    """Bind before serving, so a port in use is a one-line error and not a traceback."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Saying IPPROTO_TCP is what makes asyncio set TCP_NODELAY on the connections: without it
    # every small answer waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class _Server(uvicorn.Server):
    """uvicorn's server minus its own signal handling: one SIGINT or SIGTERM stops them all."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_test_patch(
    *,
    registry: Registry,
    level: int,
    log_dir: Path,
    task: Task | None,
    sockets: Sequence[socket.socket],
    daemon_api: str = "auto",
    daemon_url: str | None = None,
    allowed_hosts: Sequence[str] = (),
    ready: str = "",
) -> None:
    """Serve MCP on sockets[0] and, with a task, our daemon on sockets[1] (loopback); without
    one, talk to the daemon `open_daemon` finds (sidecar mode, our API or the upstream one).

    One process, one loop: the embedded daemon is reached over real HTTP all the same, so a
    cancelled call closes its request and the daemon kills the case's process group.
    """
    apps: list[Starlette] = []
    async with contextlib.AsyncExitStack() as stack:
        daemon: Daemon
        if task is not None:
            app = create_app(task, registry, level)
            apps.append(app)
            host, port = sockets[1].getsockname()[:2]
            client = httpx.AsyncClient(  # plain HTTP: no TLS context to load at start
                base_url=f"http://{host}:{port}", trust_env=False, verify=False
            )
            # Same process: a failed check's log is read from the spool, not streamed to us.
            local_logs = app.state.daemon.log_path
            daemon = HttpDaemon(await stack.enter_async_context(client), local_logs=local_logs)
        else:
            daemon = await stack.enter_async_context(open_daemon(daemon_api, daemon_url))
            print(f"ssebench: daemon: {daemon.description}", file=sys.stderr, flush=True)
            if names := daemon.unsupported(registry.checks):
                print(f"ssebench: warning: {unsupported_warning(names)}", file=sys.stderr)
        mcp = build_server(registry.checks, level, daemon, log_dir)
        apps.insert(0, create_http_app(mcp, allowed_hosts=allowed_hosts))
        await _serve_all(apps, sockets, ready)


async def _serve_all(
    apps: Sequence[Starlette], sockets: Sequence[socket.socket], ready: str
) -> None:
    """Run every app on its socket; one SIGINT or SIGTERM stops all of them together."""
    servers = [
        _Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=STOP_GRACE))
        for app in apps
    ]
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, _stop, servers)
    tasks = [
        asyncio.create_task(server.serve(sockets=[sock]))
        for server, sock in zip(servers, sockets, strict=True)
    ]
    while not all(server.started for server in servers):
        if any(task.done() for task in tasks):
            break
        await asyncio.sleep(0.02)
    else:
        print(ready, file=sys.stderr, flush=True)
    try:
        await asyncio.gather(*tasks)
    finally:
        _stop(servers)


def _stop(servers: Sequence[uvicorn.Server]) -> None:
    for server in servers:
        server.should_exit = True
