"""Listening sockets and uvicorn, for `serve` and `daemon` alike: bound before anything is said.

Binding (and listening) first makes a port in use, or one port given twice, a one-line error
before the command announces anything (`ssebench run` binds them itself, before its server
starts, and hands them over); then one SIGINT or SIGTERM stops every app together,
quietly (core/server/quiet.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import Iterator, Sequence

import uvicorn
from starlette.types import ASGIApp

from ssebench.core.errors import ConfigError
from ssebench.core.server.quiet import QuietStop

STOP_GRACE = 1  # seconds a request may take to finish once we stop; a running call is cut
HANDED_OVER = "SSEBENCH_LISTEN_FDS"  # `ssebench run` to its server: the sockets it bound


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; listening at once is what catches a port another of ours holds."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Saying IPPROTO_TCP is what makes asyncio set TCP_NODELAY on the connections: without it
    # every small answer waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen()
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def bind_all(addresses: Sequence[tuple[str, int, str]]) -> list[socket.socket]:
    """Every (host, port, what chose it) bound, or none: the first that fails is a one-line
    ConfigError naming the flag to change."""
    sockets: list[socket.socket] = []
    for host, port, chosen_by in addresses:
        try:
            sockets.append(bind(host, port))
        except OSError as exc:
            for sock in sockets:
                sock.close()
            reason = exc.strerror or str(exc)
            raise ConfigError(f"cannot listen on {host}:{port} ({chosen_by}): {reason}") from None
    return sockets


def handed_over(addresses: Sequence[tuple[str, int, str]]) -> list[socket.socket] | None:
    """The sockets `ssebench run` bound for these addresses and handed to its server (their
    descriptors in HANDED_OVER), so no other server can answer in its place; None when this
    process was given none. The variable is consumed: no child of ours sees it."""
    raw = os.environ.pop(HANDED_OVER, None)
    if raw is None:
        return None
    fds = [int(fd) for fd in raw.split(",") if fd.isdigit()]
    if len(fds) != len(addresses):
        raise ConfigError(f"{HANDED_OVER}={raw!r}: expected {len(addresses)} descriptors")
    return [socket.socket(fileno=fd) for fd in fds]


class _Server(uvicorn.Server):
    """uvicorn's server minus its own signal handling: one SIGINT or SIGTERM stops them all."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_all(apps: Sequence[ASGIApp], sockets: Sequence[socket.socket], ready: str) -> None:
    """Run every app on its socket, print `ready` once all have started; one SIGINT or SIGTERM
    stops all of them together."""
    # No WebSocket is ever served: ws="none" spares importing a WebSocket protocol at start.
    servers = [
        _Server(
            uvicorn.Config(
                app, log_level="warning", timeout_graceful_shutdown=STOP_GRACE, ws="none"
            )
        )
        for app in apps
    ]
    quiet = QuietStop()

    def stop() -> None:
        quiet.stopping = True
        _stop(servers)

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop)
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
        quiet.say()


def _stop(servers: Sequence[uvicorn.Server]) -> None:
    for server in servers:
        server.should_exit = True
