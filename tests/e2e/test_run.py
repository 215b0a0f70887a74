"""`ssebench run`, the container entrypoint: server first, then CMD, CMD's status back."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ssebench.testing.servers import (
    SSEBENCH,
    check_text,
    clean_env,
    free_port,
    port_is_free,
    run_ssebench,
    serving,
    start_child,
    taken_port,
)

from .tasks import make_task

pytestmark = pytest.mark.timeout(120)

# An agent stand-in: calls test_patch over MCP and prints the text it got.
AGENT = """
import asyncio, sys, fastmcp
async def main():
    async with fastmcp.Client(sys.argv[1]) as client:
        result = await client.call_tool_mcp("test_patch", {})
    print(result.content[0].text)
asyncio.run(main())
"""

# Waits for a signal and exits with a status that names it.
SIGNAL_WAITER = """
import signal, sys, time
for sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(sig, lambda n, f: (print(f"got {n}", flush=True), sys.exit(40 + n)))
print("ready", flush=True)
time.sleep(60)
sys.exit(1)
"""


def _ports() -> list[str]:
    return ["--port", str(free_port()), "--daemon-port", str(free_port())]


def _free(port: str) -> bool:
    """Nobody listens there (connections left in TIME_WAIT do not count)."""
    return port_is_free(int(port), reuse_address=True)


def _run(
    tmp: Path, args: list[str], command: list[str], **env: str
) -> subprocess.CompletedProcess[str]:
    return run_ssebench("run", *args, "--", *command, env=clean_env(tmp, **env), timeout=90)


def test_cmd_reaches_test_patch_and_its_status_comes_back(tmp_path: Path) -> None:
    task = make_task(tmp_path / "task", "failing")
    ports = _ports()
    url = f"http://127.0.0.1:{ports[1]}/mcp"
    done = _run(
        tmp_path,
        ["--task", str(task), "--difficulty", "0", *ports],
        [sys.executable, "-c", AGENT + "\nsys.exit(7)", url],
    )
    assert done.returncode == 7, done.stderr
    # --difficulty 0 reached the server: the agent saw the level-0 report.
    assert done.stdout.removesuffix("\n") == check_text(task, 0, clean_env(tmp_path))
    assert "ssebench: serving test_patch" in done.stderr  # the server speaks on stderr only
    assert _free(ports[1]) and _free(ports[3]), "the server must be stopped afterwards"


@pytest.mark.parametrize(("command", "status"), [("exit 0", 0), ("exit 3", 3), ("kill -9 $$", 137)])
def test_exit_status_passes_through(tmp_path: Path, command: str, status: int) -> None:
    task = make_task(tmp_path / "task", "bare")
    done = _run(tmp_path, ["--task", str(task), *_ports()], ["sh", "-c", command])
    assert done.returncode == status, done.stderr


@pytest.mark.parametrize(
    ("args", "env"),
    [
        ([], {"SSE_DIFFICULTY": "7"}),
        ([], {"SSE_DIFFICULTY": "two"}),
        (["--difficulty", "9"], {}),
    ],
)
def test_bad_difficulty_exits_2_without_running_cmd(
    tmp_path: Path, args: list[str], env: dict[str, str]
) -> None:
    task = make_task(tmp_path / "task", "bare")
    marker = tmp_path / "cmd-ran"
    done = _run(tmp_path, ["--task", str(task), *args, *_ports()], ["touch", str(marker)], **env)
    assert done.returncode == 2
    assert not marker.exists()
    assert len(done.stderr.splitlines()) == 1
    assert "difficulty" in done.stderr.lower()


def test_server_that_cannot_start_exits_2_with_its_error(tmp_path: Path) -> None:
    task = make_task(tmp_path / "task", "bare")
    marker = tmp_path / "cmd-ran"
    with taken_port() as taken:
        port = str(taken)
        args = ["--task", str(task), "--port", port, "--daemon-port", str(free_port())]
        done = _run(tmp_path, args, ["touch", str(marker)])
    assert done.returncode == 2
    assert not marker.exists()
    assert f"cannot listen on 127.0.0.1:{port} (--port): Address already in use" in done.stderr


@pytest.mark.parametrize("flag", ["--port", "--daemon-port"])
def test_a_port_another_ssebench_server_holds_never_starts_cmd(tmp_path: Path, flag: str) -> None:
    """Another task's server at another level answers initialize on that port: `run` used to
    take it for its own and start CMD, which then talked to the wrong server."""
    other = make_task(tmp_path / "other", "failing")
    task = make_task(tmp_path / "task", "bare")
    marker = tmp_path / "cmd-ran"
    with serving(tmp_path, other, 0) as held:
        port = held.port if flag == "--port" else held.daemon_port
        ports = {"--port": str(free_port()), "--daemon-port": str(free_port()), flag: str(port)}
        args = ["--task", str(task), "--difficulty", "2", *(x for kv in ports.items() for x in kv)]
        done = _run(tmp_path, args, ["touch", str(marker)])
    assert (done.returncode, done.stdout, marker.exists()) == (2, "", False)
    what = "--port" if flag == "--port" else "--daemon-port, the embedded daemon's port"
    assert done.stderr.splitlines() == [
        f"ssebench: error: cannot listen on 127.0.0.1:{port} ({what}): Address already in use"
    ]


def test_wait_that_runs_out(tmp_path: Path) -> None:
    """No server answers in 50 ms (it is still starting Python): say so, never run CMD."""
    task = make_task(tmp_path / "task", "bare")
    marker = tmp_path / "cmd-ran"
    ports = _ports()
    done = _run(
        tmp_path, ["--task", str(task), *ports], ["touch", str(marker)], SSE_MCP_TIMEOUT="0.05"
    )
    assert done.returncode == 3
    assert not marker.exists()
    assert "did not answer" in done.stderr and "SSE_MCP_TIMEOUT" in done.stderr
    assert _free(ports[1]) and _free(ports[3])


def test_missing_command(tmp_path: Path) -> None:
    task = make_task(tmp_path / "task", "bare")
    done = _run(tmp_path, ["--task", str(task), *_ports()], ["no-such-command-ssebench"])
    assert done.returncode == 127
    assert "cannot run 'no-such-command-ssebench'" in done.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_are_forwarded_to_cmd(tmp_path: Path, sig: signal.Signals) -> None:
    task = make_task(tmp_path / "task", "bare")
    ports = _ports()
    proc = start_child(
        [*SSEBENCH, "run", "--task", str(task), *ports, "--", sys.executable, "-c", SIGNAL_WAITER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=clean_env(tmp_path),
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"
        started = time.monotonic()
        proc.send_signal(sig)
        status = proc.wait(30)
        stopped_in = time.monotonic() - started
    finally:
        proc.kill()
        proc.communicate()
    assert status == 40 + sig
    print(f"\n{sig.name}: CMD and server stopped {stopped_in:.2f} s after the signal")
    assert _free(ports[1]) and _free(ports[3])
