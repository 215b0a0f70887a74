"""One call, one tree: every case of a test_patch call runs on the tree as it was when the call
began, however the agent edits it meanwhile, and the next call sees the edits.

Claude Code moves a call still running after two minutes to the background, and the agent goes
on editing. Here the agent's edits are made from the official SDK's progress callback: one
while the build runs (so before the PoCs), one while the functional tests' first case runs (so
before their second). Each case waits for the edit it must not see, then writes down what the
tree told it into a folder outside the tree (the task's `writable` folder). Under both
mechanisms, as root with the tree the agent's (uid 1000).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import mcp
import pytest

from ssebench.core.orchestrator import TREE_CHANGED
from ssebench.core.stopping import stop_process
from ssebench.testing.servers import (
    Server,
    clean_env,
    free_port,
    start_daemon,
    start_server,
    write_task,
)

pytestmark = pytest.mark.timeout(120)

AGENT = 1000
# A case that must not see an edit waits for it to be made (at most 30 s), then says what the
# tree holds; `$1` names the case, `$2` the marker it waits for ("" none).
RECORD = """\
for i in $(seq 600); do [ -z "$2" ] || [ -e "$OUT/$2" ] && break; sleep 0.05; done
echo "$1 $(cat value.txt)" >> "$OUT/seen"
"""
TASK = """\
files = ["record.sh"]
writable = ["{out}"]
env = {{ OUT = "{out}" }}

[checks.build]
run = 'sh "$SSE_TASK_DIR/record.sh" build built-go && cp value.txt built.txt'

[checks.pocs]
run = 'sh "$SSE_TASK_DIR/record.sh" pocs "" && test "$(cat built.txt)" = "$(cat value.txt)"'

[checks.functional]
cases = ['sh "$SSE_TASK_DIR/record.sh" functional-1 tested-go',
         'sh "$SSE_TASK_DIR/record.sh" functional-2 ""']
"""
PASSED_AT_1 = (
    "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n"
    "- PoCs: passed (1 of 1)\n- functional tests: passed\n\n"
    "Not available at difficulty level 1 (NO_INTENT_TEST): intent tests. Nothing is reported about "
    "them."
)


def _task(root: Path, out: Path) -> Path:
    task = write_task(root, TASK.format(out=out))
    (task / "record.sh").write_text(RECORD)
    (task / "src" / "value.txt").write_text("v1\n")
    for path in (root, task / "src"):
        path.chmod(0o755)
    if os.geteuid() == 0:
        for path in (task / "src", task / "src" / "value.txt"):
            os.chown(path, AGENT, AGENT)
    return task


async def _call(url: str, edits: dict[str, tuple[str, Path]], tree: Path) -> tuple[str, list[str]]:
    """One call with the official SDK; on a notification named in `edits`, the agent's tree
    gets its value and the case waiting for it its marker. The text and every message."""
    messages: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")
        if message in edits:
            value, marker = edits.pop(message)
            (tree / "value.txt").write_text(value)
            marker.touch(0o644)

    async with mcp.Client(url) as session:
        result = await session.call_tool("test_patch", {}, progress_callback=on_progress)
    assert [block.type for block in result.content] == ["text"]
    return str(result.content[0].text), messages


def _url(tmp: Path, task: Path, mode: str, mechanism: str, stack: contextlib.ExitStack) -> str:
    """test_patch's URL: `serve` with its daemon embedded, or a sidecar's (`ssebench daemon`
    reached over HTTP, its isolation the default: its runs name the call)."""
    env = clean_env(tmp)
    if mode == "embedded":
        args = ["--task", str(task), "--difficulty", "1", "--isolation", mechanism]
        return stack.enter_context(_stopping(start_server(tmp, args, env=env, task=task))).url
    port = free_port()
    daemon = start_daemon(tmp, task, port, env, level=1)
    stack.callback(stop_process, daemon, 10.0)
    args = ["--daemon-url", f"http://127.0.0.1:{port}", "--difficulty", "1"]
    server = start_server(tmp, args, env=env, task=task, embedded=False)
    return stack.enter_context(_stopping(server)).url


@contextlib.contextmanager
def _stopping(server: Server) -> Iterator[Server]:
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("mode", "mechanism"),
    [("embedded", "bubblewrap"), ("embedded", "landlock"), ("sidecar", "auto")],
)
def test_every_case_of_a_call_runs_on_the_tree_of_its_start(
    tmp_path: Path, passable_tmp: Path, mode: str, mechanism: str
) -> None:
    out = passable_tmp / "out"
    task = _task(passable_tmp / "task", out)
    tree = task / "src"
    edits = {
        "build: started": ("v2\n", out / "built-go"),
        "functional tests: case 1 of 2 started": ("v3\n", out / "tested-go"),
    }
    with contextlib.ExitStack() as stack:
        url = _url(tmp_path, task, mode, mechanism, stack)
        first, messages = asyncio.run(_call(url, edits, tree))
        assert first == PASSED_AT_1
        seen = (out / "seen").read_text()
        assert seen == "build v1\npocs v1\nfunctional-1 v1\nfunctional-2 v1\n"
        assert messages[-2:] == [TREE_CHANGED, "finished"]

        (out / "seen").unlink()
        second, messages = asyncio.run(_call(url, {}, tree))
        assert second == PASSED_AT_1
        seen = (out / "seen").read_text()
        assert seen == "build v3\npocs v3\nfunctional-1 v3\nfunctional-2 v3\n"
        assert TREE_CHANGED not in messages
