"""The README's container command against the upstream stand-in, as a user would run it.

`ssebench serve --daemon-api auto` finds the upstream daemon through SSE_DAEMON_SOCKET (a Unix
socket) and gives the agent, over MCP, the same text `ssebench check` gives on our own daemon
for the same commands. `ssebench grade` grades through it with {"grading": true}.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastmcp
import pytest
from upstream_standin import Standin, StandinTask, create_standin

from ssebench.testing.servers import check_text, clean_env, run_ssebench, serving_app, start_server

pytestmark = pytest.mark.timeout(120)

FIXED = "echo 'decoded 12 bytes'"
TRIGGERS = "echo '==7==ERROR: AddressSanitizer: heap-buffer-overflow' >&2; exit 1"
BUILD = "echo 'cc -o rle rle.c'"
FUNCTIONAL = "echo 'ok 1 - roundtrip'"


def write_pair(root: Path, pocs: list[str], functional: str) -> tuple[Path, StandinTask]:
    """The same task for our daemon (task.toml) and for the stand-in."""
    source = root / "src"
    source.mkdir(parents=True)
    paths = []
    for i, script in enumerate(pocs):
        path = root / f"crash-{i}.sh"
        path.write_text(script + "\n")
        paths.append(str(path))
    cases = ", ".join(json.dumps(f"bash {p}") for p in paths)
    (root / "task.toml").write_text(
        'source = "src"\n'
        f"[checks.build]\nrun = {json.dumps(BUILD)}\n"
        f"[checks.pocs]\nfiles = {json.dumps([Path(p).name for p in paths])}\n"
        f"cases = [{cases}]\n"
        f"[checks.functional]\nrun = {json.dumps(functional)}\n"
    )
    standin = StandinTask(source, BUILD, paths, "bash {poc}", function_test=functional)
    return root, standin


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[Any]:
    """`upstream(task, level, uds=True)` serves a stand-in until the test ends."""
    with contextlib.ExitStack() as stack:

        def start(standin: StandinTask, level: int, *, uds: bool = True) -> tuple[str, Standin]:
            app = create_standin(standin, level)
            where = tmp_path / f"daemon-{level}.sock" if uds else None
            listening = stack.enter_context(serving_app(app, uds=str(where) if where else None))
            return listening, app.state.standin

        yield start


async def call(url: str) -> tuple[str, list[str]]:
    messages: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")

    async with fastmcp.Client(url) as client:
        result = await client.call_tool_mcp("test_patch", {}, progress_handler=progress)
    assert [c.type for c in result.content] == ["text"]
    return result.content[0].text, messages


@pytest.mark.parametrize(
    ("level", "pocs", "functional"),
    [
        (1, [FIXED, TRIGGERS, FIXED], FUNCTIONAL),
        (2, [FIXED, TRIGGERS], "echo 'not ok 1 - roundtrip'; exit 1"),
    ],
)
def test_container_command_gives_the_same_text_as_our_daemon(
    tmp_path: Path, upstream: Any, level: int, pocs: list[str], functional: str
) -> None:
    task, standin = write_pair(tmp_path / "task", pocs, functional)
    where, _ = upstream(standin, level)
    socket_path = where.removeprefix("unix:")
    env = clean_env(tmp_path, SSE_DAEMON_SOCKET=socket_path, SSE_DIFFICULTY=str(level))
    server = start_server(tmp_path, ["--daemon-api", "auto"], env=env, embedded=False)
    try:
        text, messages = asyncio.run(call(server.url))
        assert "ssebench: daemon: " in server.stderr()
    finally:
        server.stop()
    assert text == check_text(task, level, clean_env(tmp_path))
    if level == 2:
        assert not any("PoC" in message for message in messages)


def test_grade_through_the_upstream_daemon(tmp_path: Path, upstream: Any) -> None:
    _, standin = write_pair(tmp_path / "task", [FIXED, FIXED], FUNCTIONAL)
    url, state = upstream(standin, 4, uds=False)  # level 4: grading passes the gate regardless
    args = ("grade", "--daemon-api", "upstream", "--daemon-url", url, "--quiet")
    done = run_ssebench(*args, env=clean_env(tmp_path), timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["resolved"] is True
    assert [(c["key"], c["status"]) for c in answer["checks"]] == [
        ("build", "passed"),
        ("pocs", "passed"),
        ("intent", "passed"),
        ("functional", "passed"),
    ]
    assert [c["detail"] for c in answer["checks"]] == [None, "2 of 2", "the task has none", None]

    assert state.bodies and all(body.get("grading") is True for _, body in state.bodies)
