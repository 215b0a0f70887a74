"""`serve`, `daemon` and `mcp-config` as a user runs them: start-up refusals, sidecar mode."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
import tomllib
from pathlib import Path
from typing import Any

import fastmcp
import httpx
import pytest

from .conftest import (
    CLI,
    check_text,
    clean_env,
    free_port,
    make_task,
    port_is_free,
    start_server,
)

pytestmark = pytest.mark.timeout(120)

BAD_LEVELS = ["5", "-1", "02", " 2", "2.0", "two", ""]


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("command", ["serve", "daemon"])
@pytest.mark.parametrize("value", BAD_LEVELS)
def test_bad_difficulty_refused_before_listening(tmp_path: Path, command: str, value: str) -> None:
    task = make_task(tmp_path / "task", "bare")
    port = free_port()
    done = _run(
        [command, "--task", str(task), "--port", str(port)],
        clean_env(tmp_path, SSE_DIFFICULTY=value),
    )
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "SSE_DIFFICULTY" in lines[0] and repr(value) in lines[0]
    assert port_is_free(port)


def test_port_in_use_is_one_line(tmp_path: Path) -> None:
    task = make_task(tmp_path / "task", "bare")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        mcp_taken = ["--port", str(port)]
        daemon_taken = ["--port", str(free_port()), "--daemon-port", str(port)]
        for ports in (mcp_taken, daemon_taken):
            done = _run(["serve", "--task", str(task), *ports], clean_env(tmp_path))
            assert done.returncode == 2
            assert done.stderr.splitlines() == [
                f"ssebench: error: cannot listen on 127.0.0.1:{port}: Address already in use"
            ]


def test_serve_needs_a_task_or_a_daemon(tmp_path: Path) -> None:
    done = _run(["serve", "--port", str(free_port())], clean_env(tmp_path))
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and "--daemon-url" in done.stderr


def test_remote_address_needs_the_flag_and_warns(tmp_path: Path, serve: Any) -> None:
    task = make_task(tmp_path / "task", "bare")
    done = _run(["serve", "--task", str(task), "--host", "0.0.0.0"], clean_env(tmp_path))
    assert done.returncode == 2
    assert "--allow-remote" in done.stderr and len(done.stderr.splitlines()) == 1
    server = serve("bare", args=["--host", "0.0.0.0", "--allow-remote"])
    assert "warning: serving test_patch on 0.0.0.0" in server.stderr()
    # Still guarded: a rebinding Host is refused on the wide address too.
    rebound = httpx.get(f"http://127.0.0.1:{server.port}/healthz", headers={"Host": "evil.example"})
    assert rebound.status_code == 421


def test_ready_line_names_url_level_and_task(serve: Any) -> None:
    server = serve("bare", 3)
    line = f"ssebench: serving test_patch at http://127.0.0.1:{server.port}/mcp (difficulty 3, task"
    deadline = time.monotonic() + 10  # printed once both servers report started
    while line not in server.stderr() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert line in server.stderr()


def test_sidecar_mode_against_a_standalone_daemon(tmp_path: Path) -> None:
    task = make_task(tmp_path / "task", "failing")
    env = clean_env(tmp_path, SSE_DIFFICULTY="1")
    expected = check_text(task, 1, env)
    port = free_port()
    log = (tmp_path / "daemon.log").open("wb")
    daemon = subprocess.Popen(
        [*CLI, "daemon", "--task", str(task), "--port", str(port)], env=env, stderr=log
    )
    try:
        server = start_server(
            tmp_path, [], env={**env, "SSE_DAEMON_URL": f"http://127.0.0.1:{port}"}, embedded=False
        )
        try:

            async def call() -> str:
                async with fastmcp.Client(server.url) as client:
                    return (await client.call_tool_mcp("test_patch", {})).content[0].text

            assert asyncio.run(call()) == expected
            found = f"daemon: the native daemon API (/v1, difficulty 1) at http://127.0.0.1:{port}"
            assert found in server.stderr()
        finally:
            server.stop()
    finally:
        daemon.terminate()
        daemon.wait(10)
        log.close()


def test_mcp_config_forms(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    claude = _run(["mcp-config", "claude"], env)
    assert claude.stdout == (
        "claude mcp add ssebench http://localhost:3000/mcp --transport http --scope user\n"
    )
    codex = tomllib.loads(_run(["mcp-config", "codex"], env).stdout)
    assert codex == {
        "mcp_servers": {
            "ssebench": {
                "url": "http://localhost:3000/mcp",
                "startup_timeout_sec": 60,
                "tool_timeout_sec": 3600,
            }
        }
    }
    generic = json.loads(_run(["mcp-config", "json"], env).stdout)
    assert generic == {
        "mcpServers": {"ssebench": {"type": "http", "url": "http://localhost:3000/mcp"}}
    }
    assert _run(["mcp-config", "cursor"], env).returncode == 2
