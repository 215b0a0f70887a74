"""The container entrypoint, `ssebench run`: the server beside the agent's command.

`run` binds the server's ports itself and starts `ssebench serve` as a child on those sockets,
so whatever answers there is its own server, never another one holding the port (another
task's, at another level); it waits until the MCP endpoint answers a real `initialize`, then
runs the agent's command with our standard streams and exits with its status.
The server has its own session, so a Ctrl+C at a terminal reaches the agent and not the server;
the server's stdout goes to our stderr, so the agent's stdout carries only the agent's output.

What the level withholds stays out of the agent's reach where the task folder's lock does not
reach it either: before CMD starts, as root, every file outside the task folder that a
withheld check names (an imported ARVO task's /tmp/poc, in its image readable by every user)
is moved out of every other user's sight, one line on stderr saying which, and put back exactly
as it was once the server is stopped, however run ends (after a SIGKILL, at the next start:
daemon/withheld.py); without root, one warning line names those every user can read.

Exit statuses: CMD's own (128+N when signal N ended it); 2 when a port is taken, the server
cannot start (its one-line error is already on stderr) or a withheld file cannot be moved
away, and CMD never runs; 3 when the server did not answer within SSE_MCP_TIMEOUT seconds,
also without running CMD; 127 when CMD cannot be found.

SIGTERM and SIGINT go on to CMD; when CMD ends, however it ends, the server gets SIGTERM, which
stops a running call (its case, and every process the case started) before the server exits.
The server is asked by the typed request `serve` runs from (core/cli/requests.py's
ServeRequest, made from the flags given to `run`, with the settings `run` read); CMD sees the
environment we were given, unchanged.
As PID 1 of a container, run under an init that reaps orphans (`docker run --init`): we wait
only for our own two children.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING

import httpx

from ssebench.core.server.handshake import answers_initialize
from ssebench.core.stopping import CHILD, stop_server

if TYPE_CHECKING:
    from ssebench.core.cli.requests import ServeRequest
    from ssebench.core.cli.root import Root

EXIT_SERVER_FAILED = 2
EXIT_WAIT_RAN_OUT = 3
POLL_SECONDS = 0.1


def wait_for_server(server: subprocess.Popen[bytes], url: str, timeout: float) -> int | None:
    """None once the server answers; otherwise the exit status `run` should end with."""
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2.0, trust_env=False) as client:
        while True:
            if server.poll() is not None:
                return EXIT_SERVER_FAILED
            # The socket is the server's alone, bound before it started: a connection waits
            # there until the server takes it, so one request waits for it to be up (and fails
            # at once should it exit, which closes the socket).
            if answers_initialize(client, url, wait=max(deadline - time.monotonic(), 0.1)):
                return None
            if time.monotonic() >= deadline:
                print(
                    f"ssebench: error: the MCP server did not answer at {url} within "
                    f"{timeout:g} s (SSE_MCP_TIMEOUT); not starting the command",
                    file=sys.stderr,
                )
                return EXIT_WAIT_RAN_OUT
            time.sleep(POLL_SECONDS)


def _status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def run_command(command: Sequence[str]) -> int:
    """Run CMD in our process group with our streams, forwarding SIGINT and SIGTERM to it.

    A terminal's Ctrl+C already reaches CMD when we are the terminal's foreground group, so
    SIGINT is forwarded only when it cannot have come from there: no double interrupt.
    """
    started: list[subprocess.Popen[bytes]] = []
    pending: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT and _terminal_foreground():
            return
        if not started:
            pending.append(signum)  # CMD is being started: it gets the signal once it is
        elif started[0].poll() is None:
            started[0].send_signal(signum)

    # Forwarding begins before CMD starts: a signal that came between CMD's start and the
    # handler (a loaded machine) was taken for one before CMD, and CMD went on without us.
    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            started.append(subprocess.Popen(list(command)))
        except OSError as exc:
            print(f"ssebench: error: cannot run {command[0]!r}: {exc.strerror}", file=sys.stderr)
            return 127 if isinstance(exc, FileNotFoundError) else 126
        child = started[0]
        while pending:
            child.send_signal(pending.pop(0))
        return _status(child.wait())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _terminal_foreground() -> bool:
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError):
        return False


class _Terminated(Exception):
    """SIGTERM before CMD started: unwind so the server is stopped, not orphaned."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


@dataclass(frozen=True)
class Server:
    """How `run` starts its server: what it serves, the sockets it listens on (bound by `run`,
    handed over by their descriptors, so no other server can answer in its place), and its
    environment."""

    request: ServeRequest
    sockets: Sequence[socket.socket]
    env: Mapping[str, str]

    def start(self) -> subprocess.Popen[bytes]:
        from ssebench.core.server.listen import HANDED_OVER  # loaded already: it bound them

        fds = [sock.fileno() for sock in self.sockets]
        try:
            return subprocess.Popen(
                [*CHILD, self.request.model_dump_json()],
                env={**self.env, HANDED_OVER: ",".join(map(str, fds))},
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
                stdout=sys.stderr.fileno(),
                start_new_session=True,  # a terminal's Ctrl+C is for the agent, not the server
            )
        finally:
            for sock in self.sockets:  # the server's now: ours would keep the port after it
                sock.close()


def withheld_lock(root: Root) -> Callable[[], contextlib.AbstractContextManager[None]]:
    """What keeps the files outside the task folder that the level withholds from the agent
    while it runs (daemon/withheld.py): moved out of its sight as root, else named in a
    warning; nothing without a task here."""
    task = root.task
    if task is None:
        return contextlib.nullcontext
    from ssebench.core.daemons.door import kept_from_agent

    enabled = root.registry.at_level(root.settings.difficulty).enabled
    return lambda: kept_from_agent(task, enabled, _say)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_with_server(
    server: Server,
    command: Sequence[str],
    url: str,
    timeout: float,
    finished: Callable[[int], int] = lambda status: status,
    locked: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
) -> int:
    """Start the server, wait for it, run CMD, stop the server; CMD's status comes back, passed
    through `finished` (called only when CMD ran, once the server is stopped). `locked` keeps
    what the agent may not read away from it: taken once the server has read the task, before
    CMD starts, and let go once the server is stopped."""
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    started = server.start()
    lock = contextlib.ExitStack()
    try:
        failed = wait_for_server(started, url, timeout)
        if failed is not None:
            return failed
        lock.enter_context(locked())
        status = run_command(command)
    except _Terminated:
        return 128 + signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, previous)
        try:
            stop_server(started)
        finally:
            lock.close()
    return finished(status)
