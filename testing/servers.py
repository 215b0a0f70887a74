"""Real ssebench processes for tests and benchmarks: the command, ports, tasks, servers.

Like `procs` (what /proc shows) and `calls` (test_patch over MCP) beside it, never imported by
the kit: `ssebench.testing` is a pytest plugin of every session and loads no transport, while
this module loads httpx and uvicorn. Nothing here imports pytest, so the benchmarks run without
it; a wait that runs out raises NeverHappened (testing/waiting.py), an AssertionError.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from ssebench.core.server.handshake import answers_initialize
from ssebench.core.stopping import SSEBENCH as SSEBENCH  # the one spelling, `ssebench run`'s too
from ssebench.core.stopping import stop_process
from ssebench.testing.ports import free_port as free_port
from ssebench.testing.ports import port_is_free as port_is_free
from ssebench.testing.ports import taken_port as taken_port
from ssebench.testing.procs import kill_all
from ssebench.testing.waiting import NeverHappened, runner_tree, wait_for


def ssebench_argv(*args: str, prelude: str = "") -> list[str]:
    """`ssebench ARGS` as this Python runs it; `prelude` is Python run first (to lower a limit)."""
    if not prelude:
        return [*SSEBENCH, *args]
    python, flag, main = SSEBENCH
    return [python, flag, f"{prelude}\n{main}", *args]


def start_child(argv: Sequence[str], **popen: Any) -> subprocess.Popen[Any]:
    """Start `argv` as a terminal starts a command: SIGINT at its default, so a test's Ctrl+C
    reaches it even when the suite runs as a background job (bash starts those with SIGINT
    ignored, a child inherits an ignored signal, and Python then leaves it ignored)."""
    default = functools.partial(signal.signal, signal.SIGINT, signal.SIG_DFL)
    return subprocess.Popen(list(argv), preexec_fn=default, **popen)


def run_ssebench(
    *args: str, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run `ssebench ARGS` to its end, as a user would; its output as text."""
    return subprocess.run(
        ssebench_argv(*args), capture_output=True, text=True, env=env, timeout=timeout
    )


def clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment every child gets: our own log folder and temporary folder (where its
    daemon keeps the runner copy: `runner_tree`), no inherited ssebench settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SSE_") and k != "MCP_LOG_DIR"}
    env["MCP_LOG_DIR"] = str(tmp / "mcp-logs")
    (tmp / "tmp").mkdir(exist_ok=True)
    env["TMPDIR"] = str(tmp / "tmp")
    env.update(extra)
    return env


def write_task(root: Path, toml: str, *, source: str | None = "src") -> Path:
    """A task folder: an empty source tree and task.toml, `toml` after a `source` line (none
    when `source` is None: the text says it, or leaves it out)."""
    (root / "src").mkdir(parents=True, exist_ok=True)
    head = "" if source is None else f'source = "{source}"\n'
    (root / "task.toml").write_text(head + toml, encoding="utf-8")
    return root


_CHECK_TEXTS: dict[tuple[Path, int], str] = {}


def check_text(task: Path, level: int, env: dict[str, str]) -> str:
    """What `ssebench check` prints at that level: the text test_patch must return.

    Remembered per task and level: the tasks asked about never change, and each run is a
    process start.
    """
    if (task, level) not in _CHECK_TEXTS:
        args = ("check", "--task", str(task), "--difficulty", str(level), "--quiet")
        done = run_ssebench(*args, env=env, timeout=60)
        assert done.returncode in (0, 1), done.stderr
        _CHECK_TEXTS[task, level] = done.stdout.removesuffix("\n")
    return _CHECK_TEXTS[task, level]


@dataclass
class Server:
    """A running `ssebench serve` and where to reach it."""

    proc: subprocess.Popen[bytes]
    port: int
    daemon_port: int | None
    log: Path
    task: Path | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def daemon_url(self) -> str:
        return f"http://127.0.0.1:{self.daemon_port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")

    @property
    def tree(self) -> Path:
        """The runner copy its cases run on (`runner_tree`), waited for a moment."""
        return wait_for(lambda: runner_tree(self.env), 10.0, "the daemon's runner copy")

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM, as `ssebench run` stops it; SIGKILL after `grace` seconds."""
        stop_process(self.proc, grace)


READY = "ssebench: serving test_patch at "


def answers(url: str) -> bool:
    """Whether `url` answers 200 now."""
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def wait_healthy(server: Server, limit: float = 30.0) -> None:
    """Until the server answers /healthz and has said it serves (its daemon too: the line
    comes once every server started, so a test reading stderr later finds it there);
    NeverHappened if it exits or stays silent."""
    url = f"http://127.0.0.1:{server.port}/healthz"
    wait_for(
        lambda: answers(url) and READY in server.stderr(),
        limit,
        lambda: f"serve answering /healthz (it said: {server.stderr()})",
        0.05,
        alive=server.proc,
    )


def wait_initialize(proc: subprocess.Popen[bytes], url: str, limit: float = 60.0) -> float:
    """Seconds until `url` answers an MCP initialize (the request `ssebench run` waits with),
    polling every 5 ms."""
    started = time.monotonic()
    with httpx.Client(timeout=5.0, trust_env=False) as client:
        what = f"{url} answering initialize"
        wait_for(lambda: answers_initialize(client, url), limit, what, 0.005, alive=proc)
    return time.monotonic() - started


def start_server(
    tmp: Path,
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    prelude: str = "",
    task: Path | None = None,
    embedded: bool = True,
    ready: Callable[[Server], object] = wait_healthy,
) -> Server:
    """`ssebench serve ARGS` on free ports (the daemon's too when `embedded`), once `ready`."""
    port = free_port()
    daemon_port = free_port() if embedded else None
    log = tmp / f"serve-{port}.log"
    env = env if env is not None else clean_env(tmp)
    ports = ["--port", str(port)] + (["--daemon-port", str(daemon_port)] if embedded else [])
    with log.open("wb") as out:
        proc = start_child(
            ssebench_argv("serve", *args, *ports, prelude=prelude),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    server = Server(proc, port, daemon_port, log, task=task, env=env)
    try:
        ready(server)
    except BaseException:
        server.stop()
        raise
    return server


@contextlib.contextmanager
def serving(
    tmp: Path,
    task: Path,
    level: int,
    *,
    env: dict[str, str] | None = None,
    ready: Callable[[Server], object] = wait_healthy,
) -> Iterator[Server]:
    """`ssebench serve` on `task` (embedded daemon); afterwards nothing of it runs."""
    args = ["--task", str(task), "--difficulty", str(level)]
    started = start_server(tmp, args, env=env, task=task, ready=ready)
    try:
        yield started
    finally:
        started.stop()
        kill_all(task)


def start_daemon(
    tmp: Path, task: Path, port: int, env: dict[str, str], level: int = 3
) -> subprocess.Popen[bytes]:
    """`ssebench daemon` alone, answering /v1/health before we go on."""
    log = tmp / f"daemon-{port}-{time.monotonic_ns()}.log"
    args = ("daemon", "--task", str(task), "--port", str(port), "--difficulty", str(level))
    with log.open("wb") as out:
        proc = start_child(
            ssebench_argv(*args),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    try:
        wait_for(
            lambda: answers(f"http://127.0.0.1:{port}/v1/health"),
            30,
            lambda: f"the daemon answering /v1/health (it said: {log.read_text()})",
            0.05,
            alive=proc,
        )
    except BaseException:
        proc.kill()
        raise
    return proc


@contextlib.contextmanager
def serving_app(
    app: Any, *, port: int | None = None, uds: str | None = None, log_level: str = "warning"
) -> Iterator[str]:
    """Serve an ASGI app with uvicorn in a thread until the block ends; yields where it listens
    (over TCP, on `port` or a free one, or on the Unix socket `uds`)."""
    if uds is not None:
        config = uvicorn.Config(app, uds=uds, log_level=log_level, timeout_graceful_shutdown=1)
        sockets = None
        where = f"unix:{uds}"
    else:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", port or 0))
        sockets = [sock]
        config = uvicorn.Config(app, log_level=log_level, timeout_graceful_shutdown=1)
        where = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets}, daemon=True)
    thread.start()
    wait_for(lambda: server.started or not thread.is_alive(), 10, "uvicorn starting")
    if not server.started:
        raise NeverHappened("uvicorn starting: its thread ended first")
    try:
        yield where
    finally:
        server.should_exit = True
        thread.join(10)
        if sockets:
            sockets[0].close()
