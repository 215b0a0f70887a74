"""Concurrent test_patch calls run one after another; other requests are answered meanwhile."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import fastmcp
import pytest

from ssebench.testing.servers import check_text
from ssebench.testing.waiting import wait_for_async

pytestmark = pytest.mark.timeout(120)

ONE_CALL = ["build start", "build end", "functional start", "functional end"]


def test_concurrent_calls_serialize_and_tools_list_stays_answered(serve: Any) -> None:
    server = serve("traced", 2)
    expected = check_text(server.task, 2, server.env)
    trace = server.tree / "trace"  # where the server's cases run

    async def scenario() -> tuple[list[str], float]:
        async with (
            fastmcp.Client(server.url) as first,
            fastmcp.Client(server.url, mode="legacy") as second,
            fastmcp.Client(server.url) as observer,
        ):
            calls = [
                first.call_tool_mcp("test_patch", {}),
                first.call_tool_mcp("test_patch", {}),
                second.call_tool_mcp("test_patch", {}),
            ]
            running = asyncio.gather(*calls)
            await wait_for_async(trace.exists, 60, "the first call's trace")
            started = time.monotonic()
            tools = await observer.list_tools()
            listed_in = time.monotonic() - started
            assert [tool.name for tool in tools] == ["test_patch"]
            assert not running.done(), "tools/list must be answered while calls still run"
            results = await running
        return [result.content[0].text for result in results], listed_in

    texts, listed_in = asyncio.run(scenario())
    assert texts == [expected] * 3
    # Whole calls never interleave: each one's build and functional tests run back to back.
    assert trace.read_text().splitlines() == ONE_CALL * 3
    print(f"\ntools/list answered in {listed_in:.3f} s while three calls were queued")
    assert listed_in < 1.0
