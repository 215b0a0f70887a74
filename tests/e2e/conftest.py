"""Real servers for the end-to-end tests: `ssebench serve` in a subprocess on free ports.

Tasks are tiny task.toml files whose checks are shell one-liners, so a whole test_patch call
takes well under a second; the few slow ones sleep only where a test needs a call in flight.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

CLI = [sys.executable, "-c", "from ssebench.core.cli import main; main()"]

TASKS = {
    # Every check passes; two PoCs so PoC progress shows per case.
    "passing": """
[checks.build]
run = "echo building"
[checks.pocs]
cases = ["echo poc one", "echo poc two"]
[checks.intent]
run = "echo intent ok"
[checks.functional]
run = "echo functional ok"
""",
    # The build passes; the second PoC still triggers, intent and functional tests fail.
    "failing": """
[checks.build]
run = "echo building"
timeout = 1
[checks.pocs]
cases = [
    "echo clean",
    "echo 'ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1'; exit 1",
    "echo never reached",
]
[checks.intent]
run = "echo 'intent: bounds not checked'; exit 1"
[checks.functional]
run = "echo 'FAIL: test_roundtrip'; echo 'expected 3, got 4'; exit 1"
""",
    # The build hangs while $SSE_TASK_DIR/hang exists: it records its process group and leaves
    # a background child in it, the case a kill must not miss.
    "switch": """
[checks.build]
run = '''
if [ -e "$SSE_TASK_DIR/hang" ]; then
  echo $$ > "$SSE_TASK_DIR/pgid.tmp" && mv "$SSE_TASK_DIR/pgid.tmp" "$SSE_TASK_DIR/pgid"
  sleep 30 & sleep 30
fi
echo built
'''
[checks.pocs]
cases = ["echo poc"]
[checks.functional]
run = "echo functional ok"
""",
    # Each check appends its start and end to $SSE_TASK_DIR/trace, taking a moment in between.
    "traced": """
[checks.build]
run = 't="$SSE_TASK_DIR/trace"; echo build start >>"$t"; sleep 0.4; echo build end >>"$t"'
[checks.functional]
run = 't="$SSE_TASK_DIR/trace"; echo functional start >>"$t"; sleep 0.4; echo functional end >>"$t"'
""",
    # A task without PoCs or intent tests: the daemon must answer about them as for any other.
    "bare": """
[checks.build]
run = "echo building"
[checks.functional]
run = "echo functional ok"
""",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_is_free(port: int) -> bool:
    """Nothing listens there (a server that was refused or stopped let go of its port)."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def make_task(root: Path, kind: str) -> Path:
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "task.toml").write_text(f'source = "src"\n{TASKS[kind]}', encoding="utf-8")
    return root


def clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment every child gets: our own log folder, no inherited ssebench settings."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("SSE_") and key != "MCP_LOG_DIR"
    }
    env["MCP_LOG_DIR"] = str(tmp / "mcp-logs")
    env.update(extra)
    return env


_CHECK_TEXTS: dict[tuple[Path, int], str] = {}


def check_text(task: Path, level: int, env: dict[str, str]) -> str:
    """What `ssebench check` prints at that level: the text test_patch must return.

    Remembered per task and level: these tasks never change, and each run is a process start.
    """
    if (task, level) in _CHECK_TEXTS:
        return _CHECK_TEXTS[task, level]
    done = subprocess.run(
        [*CLI, "check", "--task", str(task), "--difficulty", str(level), "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode in (0, 1), done.stderr
    _CHECK_TEXTS[task, level] = done.stdout.removesuffix("\n")
    return _CHECK_TEXTS[task, level]


def live_members(pgid: int) -> list[int]:
    """Processes of the group that still run; a zombie waiting for its reaper does not count."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry))
    return members


def wait_group_gone(pgid: int, since: float, limit: float = 2.0) -> float:
    """Seconds from `since` (a monotonic instant) until no live process of the group is left."""
    while live_members(pgid):
        if time.monotonic() - since > limit:
            pytest.fail(f"process group {pgid} still runs {live_members(pgid)} after {limit} s")
        time.sleep(0.01)
    return time.monotonic() - since


def read_pgid(task: Path, limit: float = 30.0) -> int:
    """The process group the hanging build recorded, once it has started."""
    path = task / "pgid"
    deadline = time.monotonic() + limit
    while not path.exists():
        if time.monotonic() > deadline:
            pytest.fail("the hanging build never started")
        time.sleep(0.01)
    return int(path.read_text())


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

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def wait_healthy(server: Server, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            pytest.fail(f"serve exited {server.proc.returncode}: {server.stderr()}")
        try:
            if httpx.get(f"http://127.0.0.1:{server.port}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    pytest.fail(f"serve did not answer /healthz within {limit} s: {server.stderr()}")


def start_server(
    tmp: Path,
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    prelude: str = "",
    task: Path | None = None,
    embedded: bool = True,
) -> Server:
    """`ssebench serve ARGS` on free ports; `prelude` is Python run first (to shorten timeouts)."""
    port = free_port()
    daemon_port = free_port() if embedded else None
    log = tmp / f"serve-{port}.log"
    env = env if env is not None else clean_env(tmp)
    code = f"{prelude}\nfrom ssebench.core.cli import main; main()"
    ports = ["--port", str(port)] + (["--daemon-port", str(daemon_port)] if embedded else [])
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, "serve", *args, *ports],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    server = Server(proc, port, daemon_port, log, task=task, env=env)
    try:
        wait_healthy(server)
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[object]:
    """Start servers for one test: `serve(kind, level)` or `serve(args=[...])`; all stop after."""
    started: list[Server] = []

    def start(
        kind: str | None = None,
        level: int | None = None,
        *,
        args: list[str] | None = None,
        **options: object,
    ) -> Server:
        task = make_task(tmp_path / f"task-{kind}-{len(started)}", kind) if kind else None
        argv = list(args or [])
        if task is not None:
            argv += ["--task", str(task)]
        if level is not None:
            argv += ["--difficulty", str(level)]
        server = start_server(tmp_path, argv, task=task, **options)  # type: ignore[arg-type]
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def shared_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """Servers shared by the whole run, keyed by (task, level): each start costs seconds."""
    tmp = tmp_path_factory.mktemp("shared")
    servers: dict[tuple[str, int], Server] = {}

    def get(kind: str, level: int) -> Server:
        if (kind, level) not in servers:
            task = make_task(tmp / f"{kind}-{level}", kind)
            args = ["--task", str(task), "--difficulty", str(level)]
            servers[kind, level] = start_server(tmp, args, task=task)
        return servers[kind, level]

    yield get
    for server in servers.values():
        server.stop()
