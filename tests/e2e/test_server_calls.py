"""The server hands each test_patch answer on (`on_call`, what `ssebench run --prediction-out`
records: core/calls.py), in memory on a real task's in-process daemon: the answer whole, when
it came, how long it took; and at every level the record names exactly the checks the level
runs, never a withheld one."""

from __future__ import annotations

import asyncio
import time

import fastmcp
import pytest

from ssebench.core.calls import from_report
from ssebench.core.daemons.door import ServiceConfig, load_task
from ssebench.core.daemons.inprocess import local_daemon
from ssebench.core.server.app import build_server
from ssebench.testing import TaskHandle, make_task

FAILING = {
    "build": "echo building",
    "pocs": ["echo clean", "echo 'ERROR: AddressSanitizer: heap-buffer-overflow'; exit 1"],
    "intent": "echo 'intent: bounds not checked'; exit 1",
    "functional": "echo 'FAIL: test_roundtrip'; exit 1",
}


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> TaskHandle:
    return make_task(tmp_path_factory.mktemp("calls") / "failing", FAILING)


def answered(task: TaskHandle, level: int) -> tuple[str, list[tuple[str, float, float]]]:
    """A call's text, and what was handed on for it."""
    said: list[tuple[str, float, float]] = []

    async def main() -> str:
        config = ServiceConfig(load_task(task.path, task.registry.checks), task.registry, level)
        async with local_daemon(config) as daemon:
            server = build_server(task.registry.checks, level, daemon, task.log_dir,
                                  on_call=lambda *call: said.append(call))  # fmt: skip
            async with fastmcp.Client(server) as client:
                result = await client.call_tool_mcp("test_patch", {})
        return str(result.content[0].text)  # type: ignore[union-attr]

    return asyncio.run(main()), said


@pytest.mark.parametrize("level", range(5))
def test_each_answer_is_handed_on_and_names_only_the_levels_checks(
    task: TaskHandle, level: int
) -> None:
    before = time.time()
    text, said = answered(task, level)
    ((handed, started, seconds),) = said
    assert handed == text == task.report(level)
    assert before <= started <= started + seconds <= time.time()
    record = from_report(handed, started, seconds, level)
    enabled = task.registry.at_level(level).enabled
    assert [check.name for check in record.checks] == [check.name for check in enabled]
    assert record.headline == text.split("\n")[0]
