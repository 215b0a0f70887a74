"""The README's container command against the upstream stand-in, as a user would run it.

`ssebench serve --daemon-api auto` finds the upstream daemon through SSE_DAEMON_SOCKET (a Unix
socket) and gives the agent, over MCP, the same text `ssebench check` gives on our own daemon
for the same commands (but for a log on stderr, which upstream's own MCP server shows after
stdout and a blank line). `ssebench grade` grades through its admin socket, as upstream's
evaluator does.
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
from upstream_standin import Standin, StandinTask, create_standin, serving_standin

from ssebench.core.daemons.upstream import AGENT_FACING
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
    ours = check_text(task, level, clean_env(tmp_path))
    # The PoC's report is on its stderr: upstream's MCP server shows it after stdout and "\n\n".
    assert text == ours.replace("Full log (PoCs):\n", "Full log (PoCs):\n\n\n")
    if level == 2:
        assert not any("PoC" in message for message in messages)


def test_grade_through_the_upstream_daemons_admin_socket(tmp_path: Path) -> None:
    """As upstream's evaluator grades: the admin socket in SSE_ADMIN_SOCKET, beside the
    agent's in SSE_DAEMON_SOCKET; the agent's diff applied to a clean copy first."""
    _, standin = write_pair(tmp_path / "task", [FIXED, FIXED], FUNCTIONAL)
    with serving_standin(standin, 4) as at:  # level 4: the agent's listeners run nothing
        env = clean_env(tmp_path, SSE_ADMIN_SOCKET=at.admin, SSE_DAEMON_SOCKET=at.socket)
        done = run_ssebench("grade", "--daemon-api", "upstream", "--quiet", env=env, timeout=60)
        bodies = list(at.standin.bodies)
        url = f"unix:{at.socket}"
        agents = run_ssebench("grade", "--daemon-api", "upstream", "--daemon-url", url,
                              "--quiet", env=clean_env(tmp_path), timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["resolved"] is True
    assert [(c["key"], c["status"], c["detail"]) for c in answer["checks"]] == [
        ("build", "passed", None),
        ("pocs", "passed", "2 of 2"),
        ("intent", "passed", "the task has none"),
        ("functional", "passed", None),
    ]
    assert [(action, privileged) for action, _, privileged in bodies] == [
        ("build", True), ("run_poc", True), ("run_poc", True), ("function_test", True),
    ]  # fmt: skip
    assert (agents.returncode, agents.stdout) == (3, ""), agents.stderr
    assert f"POST /prepare_grading: HTTP 403{AGENT_FACING}: " in agents.stderr


def test_an_agents_diff_that_does_not_apply_is_unresolved(tmp_path: Path) -> None:
    task, standin = write_pair(tmp_path / "task", [FIXED], FUNCTIONAL)
    (task / "src" / "rle.c").write_text("int decode(void);\n")
    with serving_standin(standin, 4) as at:
        (task / "src" / "rle.c").write_text("int decode(int size);\n")  # the agent's change
        at.standin.drift = {"rle.c": "int decode(char *out);\n"}
        env = clean_env(tmp_path, SSE_ADMIN_SOCKET=at.admin)
        done = run_ssebench("grade", "--daemon-api", "upstream", "--quiet", env=env, timeout=60)
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout) == {
        "resolved": False,
        "reason": "patch-does-not-apply",
        "patch": {
            "applied": False,
            "error": "git apply failed, , error: patch failed: rle.c:1; error: rle.c: patch does "
            "not apply",
            "dropped": [],
        },
        "protected": {"reverted": []},
        "signals": [],
        "checks": [],
    }
