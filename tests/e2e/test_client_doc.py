"""docs/clients.md's Python client, as the page shows it, against a real `ssebench serve`: it
runs on the MCP SDK ssebench installs (2.x), prints exactly the report `ssebench check`
prints, and every progress notification the call sent, in order, up to `finished`. And what
the page's table of the tool's hints says a call does: it writes its saved logs, never the
agent's tree, and a second call gives the same report."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ssebench.core.daemons.door import available
from ssebench.daemon.confine.user import case_user
from ssebench.testing.servers import check_text, clean_env, serving, start_server

from .tasks import make_task

pytestmark = pytest.mark.timeout(120)
PAGE = Path(__file__).resolve().parents[2] / "docs" / "clients.md"
# A build that writes its outputs where it runs, and functional tests whose log is saved.
WRITER = """
[checks.build]
run = "cc -x c -o prog main.c && echo built > build.log && rm -f stale && touch main.c"
[checks.functional]
run = "seq 1 30000; exit 1"
"""


def snippet() -> str:
    """The page's one Python block."""
    (code,) = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    return str(code)


def test_the_documented_client_calls_test_patch(tmp_path: Path) -> None:
    script = tmp_path / "test_patch.py"
    script.write_text(snippet())
    task = make_task(tmp_path / "task", "failing")
    env = clean_env(tmp_path)
    with serving(tmp_path, task, 0, env=env) as server:
        done = subprocess.run([sys.executable, str(script), server.url], env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == check_text(task, 0, env) + "\n"
    total = "7.0"  # a case per command (1 build, 3 PoCs, 1 intent, 1 functional) and the report
    assert done.stderr.splitlines() == [
        f"test_patch: build: started (0.00 of {total})",
        f"test_patch: build: passed (1.00 of {total})",
        f"test_patch: PoCs: started (1.50 of {total})",
        f"test_patch: PoCs: case 1 of 3 started (1.67 of {total})",
        f"test_patch: PoCs: case 1 of 3 passed (2.00 of {total})",
        f"test_patch: PoCs: case 2 of 3 started (2.50 of {total})",
        f"test_patch: PoCs: case 2 of 3 FAILED (3.00 of {total})",
        f"test_patch: PoCs: FAILED (3.50 of {total})",
        f"test_patch: intent tests: started (3.67 of {total})",
        f"test_patch: intent tests: FAILED (4.00 of {total})",
        f"test_patch: functional tests: started (4.50 of {total})",
        f"test_patch: functional tests: FAILED (5.00 of {total})",
        "test_patch: finished (7.00 of 7.0)",
    ]


def test_the_page_shows_the_sdk_that_is_installed() -> None:
    """The snippet's API is 2.x's: `Client` exists, the 1.x entry point does not."""
    from importlib.metadata import version

    import mcp
    import mcp.client.streamable_http as streamable

    assert int(version("mcp").split(".")[0]) >= 2
    assert hasattr(mcp, "Client") and not hasattr(streamable, "streamablehttp_client")
    assert "from mcp import Client" in snippet()


def tree_state(tree: Path) -> list[tuple[object, ...]]:
    """Every path under `tree` (itself too) with its type, mode, owner, size, times and bytes."""
    state = []
    for path in sorted([tree, *tree.rglob("*")]):
        info = path.lstat()
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        state.append((str(path.relative_to(tree)), info.st_mode, info.st_uid, info.st_gid,
                      info.st_size, info.st_mtime_ns, info.st_ctime_ns, data))  # fmt: skip
    return state


@pytest.mark.parametrize("mechanism", available(case_user()))
def test_a_call_writes_its_saved_log_and_never_the_agents_tree(
    tmp_path: Path, mechanism: str
) -> None:
    task = tmp_path / "task"
    (task / "src").mkdir(parents=True)
    (task / "task.toml").write_text('source = "src"\n' + WRITER)
    (task / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    (task / "src" / "stale").write_text("an old output\n")
    if os.geteuid() == 0:  # the agent's tree is its user's, as in a task container
        for path in [task / "src", *(task / "src").iterdir()]:
            os.chown(path, 1000, 1000)
    before = tree_state(task / "src")
    script = tmp_path / "test_patch.py"
    script.write_text(snippet())
    env = clean_env(tmp_path)
    args = ["--task", str(task), "--difficulty", "0", "--isolation", mechanism]
    server = start_server(tmp_path, args, env=env, task=task)
    try:
        argv = [sys.executable, str(script), server.url]
        reports = [
            subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60).stdout
            for _ in range(2)
        ]
    finally:
        server.stop()
    assert tree_state(task / "src") == before
    named = [re.findall(r"Full log available at (\S+)", text) for text in reports]
    saved = sorted(str(path) for path in Path(env["MCP_LOG_DIR"]).rglob("*.txt"))
    assert sorted(name for names in named for name in names) == saved
    assert [len(names) for names in named] == [1, 1] and len(set(saved)) == 2
    first, second = (re.sub(r"Full log available at \S+", "", text) for text in reports)
    assert "test_patch result: FAILED" in first and first == second
