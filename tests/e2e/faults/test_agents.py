"""Agents misbehaving: two calling at once, one vanishing mid-call. Real client processes.

The build records its start and end in a trace and prints a token of its own run with enough
lines to be cut, so each report and saved log can be matched to exactly one run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from ssebench.testing.calls import call
from ssebench.testing.procs import assert_none_left
from ssebench.testing.servers import serving, write_task
from ssebench.testing.waiting import wait_for

from .reports import TOKEN_BUILD, check_token_report, saved_logs

pytestmark = pytest.mark.timeout(120)

LINES = 20_000
BUILD = (
    'tr=$SSE_SOURCE_DIR/trace; echo start >>"$tr"; '
    'if [ -e "$SSE_SOURCE_DIR/hang" ]; then touch "$SSE_SOURCE_DIR/running"; '
    "sleep 30 & sleep 30; fi; "
    "sleep 0.3; " + TOKEN_BUILD.format(lines=LINES).replace("exit 1", 'echo end >>"$tr"; exit 1')
)
TASK = f"""
[checks.build]
run = '''{BUILD}'''
"""
CLIENT = """
import asyncio, sys
from fastmcp import Client

async def main():
    async with Client(sys.argv[1]) as client:
        result = await client.call_tool_mcp("test_patch", {}, timeout=120)
        sys.stdout.write(result.content[0].text)

asyncio.run(main())
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    tmp = tmp_path_factory.mktemp("agents")
    task = write_task(tmp / "task", TASK)
    with serving(tmp, task, 3) as started:
        yield started


def _agent(url: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CLIENT, url], stdout=subprocess.PIPE, text=True)


def test_two_agents_calling_at_once(server: Any) -> None:
    """Two client processes: the runs do not overlap, and each gets its own run's report."""
    (server.tree / "trace").unlink(missing_ok=True)
    agents = [_agent(server.url), _agent(server.url)]
    texts = [agent.communicate(timeout=90)[0] for agent in agents]
    assert [agent.returncode for agent in agents] == [0, 0]
    tokens = {check_token_report(text, LINES) for text in texts}
    assert len(tokens) == 2
    assert (server.tree / "trace").read_text().split() == ["start", "end"] * 2
    assert_none_left(server.task)


def test_an_agent_killed_mid_call(server: Any) -> None:
    """The run stops, nothing is saved for it, and the next agent's call is its own."""
    running = server.tree / "running"
    running.unlink(missing_ok=True)
    before = saved_logs(server)
    (server.task / "src" / "hang").touch()
    agent = _agent(server.url)
    try:
        wait_for(running.exists, 30, "the build started")
        os.kill(agent.pid, signal.SIGKILL)
        agent.wait(10)
    finally:
        (server.task / "src" / "hang").unlink()
        if agent.poll() is None:
            agent.kill()
    assert_none_left(server.task)
    assert saved_logs(server) == before
    check_token_report(call(server.url), LINES)
    assert len(saved_logs(server)) == len(before) + 1


def test_the_log_folder_gets_only_whole_logs(server: Any) -> None:
    """Whatever the tests above did, every file in the log folder is one whole run's log."""
    for path in saved_logs(server):
        lines = path.read_text().split("\n")
        token = lines[0].removeprefix("run ")
        assert lines[1:] == [token] * LINES + [""], f"{path.name} is not one whole run's log"
