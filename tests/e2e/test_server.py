"""The tool in memory: `fastmcp.Client(build_server(...))` on a real task's in-process daemon.

The daemon is our own app in this process (`local_daemon`) on a task the kit writes, so the text
the tool returns is held whole against what `TaskHandle.report` gives for the same task and
level. Real HTTP and real clients are the end-to-end suite's (tests/e2e/test_mcp.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import fastmcp
import pytest

from ssebench.core.daemons.door import ServiceConfig, load_task
from ssebench.core.daemons.inprocess import local_daemon
from ssebench.core.logs import BYTE_LIMIT
from ssebench.core.server.app import build_server
from ssebench.testing import TaskHandle, make_task

ASAN = "ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1"
TASKS: dict[str, dict[str, Any]] = {
    "passing": {
        "build": "echo building",
        "pocs": ["echo poc one", "echo poc two"],
        "intent": "echo intent ok",
        "functional": "echo functional ok",
    },
    # The second PoC still triggers; the intent and functional tests fail.
    "failing": {
        "build": "echo building",
        "pocs": ["echo clean", f"echo '{ASAN}'; exit 1", "echo never reached"],
        "intent": "echo 'intent: bounds not checked'; exit 1",
        "functional": "echo 'FAIL: test_roundtrip'; exit 1",
    },
    "broken build": {"build": "echo 'cc: error: rle.c: no such file'; exit 1", "pocs": ["true"]},
}
LEVELS = range(5)


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TaskHandle]:
    root = tmp_path_factory.mktemp("server")
    return {kind: make_task(root / kind.replace(" ", "-"), TASKS[kind]) for kind in TASKS}


@contextlib.asynccontextmanager
async def in_memory(task: TaskHandle, level: int) -> AsyncIterator[fastmcp.Client[Any]]:
    """An MCP session with the server of `task` at `level`, all in this process."""
    config = ServiceConfig(load_task(task.path, task.registry.checks), task.registry, level)
    async with local_daemon(config) as daemon:
        server = build_server(task.registry.checks, level, daemon, task.log_dir)
        async with fastmcp.Client(server) as client:
            yield client


def call(task: TaskHandle, level: int, progress: Any = None) -> Any:
    async def main() -> Any:
        async with in_memory(task, level) as client:
            return await client.call_tool_mcp("test_patch", {}, progress_handler=progress)

    return asyncio.run(main())


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("kind", list(TASKS))
def test_the_answer_is_exactly_the_report(
    tasks: dict[str, TaskHandle], kind: str, level: int
) -> None:
    task = tasks[kind]
    result = call(task, level)
    assert [block.type for block in result.content] == ["text"]
    assert result.content[0].text == task.report(level)
    assert result.structured_content is None
    assert result.is_error is False


def test_the_reports_compared_differ_by_level_and_outcome(tasks: dict[str, TaskHandle]) -> None:
    """Guards the comparison above: the tasks really give different reports."""
    texts = {(kind, level): tasks[kind].report(level) for kind in TASKS for level in LEVELS}
    # Levels 3 and 4 withhold what sets "failing" apart from "passing"; level 4 runs nothing.
    assert len(set(texts.values())) == 12
    assert texts["passing", 0].startswith("test_patch result: every check passed.")
    assert texts["failing", 0] != texts["failing", 1] != texts["failing", 2]
    assert texts["broken build", 3] != texts["passing", 3]


def test_a_failing_task_at_level_1_word_for_word(tasks: dict[str, TaskHandle]) -> None:
    """The functional tests' reason comes before the PoCs' in the spec's order of precedence."""
    assert call(tasks["failing"], 1).content[0].text == (
        "test_patch result: FAILED. One or more functionality test(s) failed. Please reassess "
        "your patch and make sure it fixes the vulnerability without compromising the program's "
        "functionality.\n"
        "\n"
        "Checks:\n"
        "- build: passed\n"
        "- PoCs: FAILED (passed 1 of 3; stopped at the first that still triggers the bug)\n"
        "- functional tests: FAILED\n"
        "\n"
        "Not available at difficulty level 1 (NO_INTENT_TEST): intent tests. "
        "Nothing is reported about them.\n"
        "\n"
        "Full log (functional tests):\n"
        "FAIL: test_roundtrip"
    )


@pytest.mark.parametrize(
    ("level", "runs"),
    [
        (0, "build, PoCs, intent tests, functional tests"),
        (1, "build, PoCs, functional tests"),
        (2, "build, functional tests"),
        (3, "build"),
        (4, "no checks at all"),
    ],
)
def test_tools_list_shows_one_tool_naming_only_the_enabled_checks(
    tasks: dict[str, TaskHandle], level: int, runs: str
) -> None:
    async def listing() -> list[Any]:
        async with in_memory(tasks["passing"], level) as client:
            return await client.list_tools()

    [tool] = asyncio.run(listing())
    assert tool.name == "test_patch"
    assert tool.description == (
        "Test the current state of the task's source tree, including every uncommitted change "
        f"you made. At this difficulty level ({level}) it runs: {runs}. The result lists how "
        "each check ended and shows the log of the failed check. Takes no arguments. A call "
        "runs a full build and test cycle and can take a long time; allow a generous timeout. "
        "Progress is reported as each check starts and ends, and at least every 15 s while a "
        "check runs or the call waits for another call."
    )
    assert tool.input_schema.get("properties", {}) == {}
    assert tool.output_schema is None
    hints = tool.annotations
    assert (hints.read_only_hint, hints.destructive_hint) == (False, False)
    assert (hints.idempotent_hint, hints.open_world_hint) == (True, False)
    # Claude Code keeps a result over 50,000 characters only as a file and a 2 KB preview,
    # unless the tool declares more: the largest report is 64 KiB of log and a few KiB more.
    assert tool.meta is not None
    assert tool.meta["anthropic/maxResultSizeChars"] == 80_000 > BYTE_LIMIT + 8 * 1024


def _progress(task: TaskHandle, level: int) -> list[tuple[float, float | None, str | None]]:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    call(task, level, on_progress)
    return seen


def test_progress_in_memory_names_the_checks_and_withholds_the_rest(
    tasks: dict[str, TaskHandle],
) -> None:
    seen = _progress(tasks["passing"], 2)
    assert [message for _, _, message in seen] == [
        "build: started",
        "build: passed",
        "functional tests: started",
        "functional tests: passed",
        "finished",
    ]
    values = [progress for progress, _, _ in seen]
    assert values == sorted(set(values)), "progress must increase with every notification"
    # Two cases and the report; the PoCs and intent tests stay unknown. The last is the total.
    assert {total for _, total, _ in seen} == {3}
    assert values[-1] == 3


def test_progress_in_memory_at_level_0_reports_each_poc(tasks: dict[str, TaskHandle]) -> None:
    messages = [message for _, _, message in _progress(tasks["failing"], 0)]
    assert messages == [
        "build: started",
        "build: passed",
        "PoCs: started",
        "PoCs: case 1 of 3 started",
        "PoCs: case 1 of 3 passed",
        "PoCs: case 2 of 3 started",
        "PoCs: case 2 of 3 FAILED",  # the first that still triggers ends the PoCs
        "PoCs: FAILED",
        "intent tests: started",
        "intent tests: FAILED",
        "functional tests: started",
        "functional tests: FAILED",
        "finished",
    ]


def test_a_saved_long_log_is_named_in_the_answer(tmp_path: Path) -> None:
    """A long log is saved under the server's log folder and the answer names that file."""
    task = make_task(tmp_path / "task", {"build": "seq 20000; exit 1"})  # over 10,000 words
    text = call(task, 3).content[0].text
    [saved] = sorted(task.log_dir.iterdir())
    tail = "\n".join(str(n) for n in range(19_901, 20_001))
    assert text == (
        "test_patch result: FAILED. The project failed to build. Please reassess the correctness "
        "of your patch.\n"
        "\n"
        "Checks:\n"
        "- build: FAILED\n"
        "\n"
        "Not available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, functional tests. "
        "Nothing is reported about them.\n"
        "\n"
        f"Truncated log (build):\n{tail}\n"
        "\n"
        f"Full log available at {saved}"
    )
    assert saved.read_text() == "".join(f"{n}\n" for n in range(1, 20_001))
