"""Real processes for the fault suite: servers, standalone daemons, clients, and their leftovers.

Every test here breaks something for real (kills a daemon, fills a disk, prints what a log
should never hold) and checks four things: the answer is the one the spec gives, no process
the task started is left alive, no log is lost or mixed with another call's, and the next
call is correct. A task's processes are found by their environment (SSE_TASK_DIR names the
task), so even one that left its process group would be seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from e2e.conftest import CLI, Server, clean_env, start_server
from fastmcp import Client  # at import: its first use would add ~2 s to a timed call
from fastmcp.client.transports import ClientTransport

LIVE_LIMIT = 3.0  # seconds a killed process may take to be gone (its reaper may be slow)
FAILED_BUILD = (
    "test_patch result: FAILED. The project failed to build. Please reassess the correctness "
    "of your patch."
)
LEVEL_3_NOTE = (
    "Not available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, functional tests. "
    "Nothing is reported about them."
)
PASSED_AT_3 = (
    "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n\n"
    f"{LEVEL_3_NOTE} Without the PoCs, this result does not show whether the vulnerability is "
    "fixed."
)
NOT_SAVED = "(Full log could not be saved due to an internal error)"
# A build that prints a token of its own run and enough words to be cut, then fails: each
# report's tail and saved file must carry its own run's token and no other.
TOKEN_BUILD = (
    't=$(cat /proc/sys/kernel/random/uuid); echo "run $t"; yes "$t" | head -n {lines}; exit 1'
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "soak: many calls on one server (run by default)")


def failed_build(log: str) -> str:
    """The whole report for a failed build at level 3 whose log is shown whole."""
    head = f"{FAILED_BUILD}\n\nChecks:\n- build: FAILED\n\n{LEVEL_3_NOTE}"
    return f"{head}\n\nFull log (build):\n{log}"


def write_task(root: Path, checks: str) -> Path:
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "task.toml").write_text(f'source = "src"\n{checks}', encoding="utf-8")
    return root


def task_processes(task: Path) -> list[int]:
    """Live processes started for this task: their environment names it."""
    marker = f"SSE_TASK_DIR={task}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if state not in ("Z", "X") and marker in environ.split(b"\0"):
            found.append(int(entry))
    return found


def assert_none_left(task: Path, limit: float = LIVE_LIMIT) -> None:
    deadline = time.monotonic() + limit
    while left := task_processes(task):
        if time.monotonic() > deadline:
            kill_all(task)
            pytest.fail(f"processes of the task still alive after {limit} s: {left}")
        time.sleep(0.02)


def kill_all(task: Path) -> None:
    for pid in task_processes(task):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def saved_logs(server: Server) -> list[Path]:
    folder = Path(server.env["MCP_LOG_DIR"])
    return sorted(folder.iterdir()) if folder.exists() else []


async def call_async(url: str | ClientTransport, timeout: float = 60) -> str:
    async with Client(url) as client:
        result = await client.call_tool_mcp("test_patch", {}, timeout=timeout)
        assert [block.type for block in result.content] == ["text"]
        return str(result.content[0].text)


def call(url: str, timeout: float = 60) -> str:
    return asyncio.run(call_async(url, timeout))


def saved_path(text: str) -> Path:
    """The saved full log a truncated report names."""
    last = text.rsplit("\n", 1)[-1]
    assert last.startswith("Full log available at "), text[-300:]
    return Path(last.removeprefix("Full log available at "))


def check_token_report(text: str, lines: int) -> str:
    """A TOKEN_BUILD report: its tail and its saved file hold one run's token only."""
    assert text.startswith(FAILED_BUILD), text[:300]
    assert "\n\nTruncated log (build):\n" in text, text[:600]
    tail = text.split("\n\nTruncated log (build):\n", 1)[1].rsplit("\n\nFull log available", 1)[0]
    tokens = set(tail.split("\n"))
    assert len(tokens) == 1, f"the tail mixes runs: {sorted(tokens)[:3]}"
    token = tokens.pop()
    saved = saved_path(text).read_text()
    assert saved == f"run {token}\n" + f"{token}\n" * lines, "the saved log is not its run's"
    return token


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts; whatever is still running at its end is killed."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def start_daemon(
    tmp: Path, task: Path, port: int, env: dict[str, str], level: int = 3
) -> subprocess.Popen[bytes]:
    """`ssebench daemon` alone, answering /v1/health before we go on."""
    log = tmp / f"daemon-{port}-{time.monotonic_ns()}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*CLI, "daemon", "--task", str(task), "--port", str(port), "--difficulty", str(level)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            pytest.fail(f"the daemon exited {proc.returncode}: {log.read_text()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the daemon did not answer within 30 s: {log.read_text()}")
        time.sleep(0.05)


@contextlib.contextmanager
def serving(tmp: Path, task: Path) -> Iterator[Server]:
    """`ssebench serve` on `task` at level 3 (embedded daemon); afterwards none of it runs."""
    started = start_server(tmp, ["--task", str(task), "--difficulty", "3"], env=clean_env(tmp))
    started.task = task
    try:
        yield started
    finally:
        started.stop()
        kill_all(task)
