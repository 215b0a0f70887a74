"""test_patch over real Streamable HTTP, through fastmcp's client and the official mcp SDK's."""

from __future__ import annotations

import asyncio
from importlib.metadata import version
from typing import Any

import fastmcp
import httpx
import mcp
import pytest

from ssebench.testing.servers import check_text

pytestmark = pytest.mark.timeout(120)

CASES = [(kind, level) for kind in ("passing", "failing") for level in (0, 2)]


async def _fastmcp_call(url: str, mode: str) -> Any:
    async with fastmcp.Client(url, mode=mode) as client:
        return await client.call_tool_mcp("test_patch", {})


async def _sdk_call(url: str, mode: str) -> Any:
    async with mcp.Client(url, mode=mode) as client:
        return await client.call_tool("test_patch", {})


CLIENTS = {"fastmcp": _fastmcp_call, "mcp-sdk": _sdk_call}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_tools_list_shows_exactly_test_patch(shared_servers: Any, client: str) -> None:
    server = shared_servers("passing", 2)

    async def listing() -> list[Any]:
        if client == "fastmcp":
            async with fastmcp.Client(server.url) as session:
                return await session.list_tools()
        async with mcp.Client(server.url) as session:
            return (await session.list_tools()).tools

    tools = asyncio.run(listing())
    assert [tool.name for tool in tools] == ["test_patch"]
    tool = tools[0]
    assert tool.input_schema.get("properties", {}) == {}
    assert not tool.input_schema.get("required")
    assert tool.output_schema is None
    hints = tool.annotations
    assert (hints.read_only_hint, hints.destructive_hint) == (False, False)
    assert (hints.idempotent_hint, hints.open_world_hint) == (True, False)
    assert "no arguments" in tool.description
    assert "long time" in tool.description
    # The description names what runs at this level, and only that.
    assert "build, functional tests" in tool.description
    assert "PoC" not in tool.description and "intent" not in tool.description


def test_server_info_names_ssebench_and_its_version(shared_servers: Any) -> None:
    async def server_info() -> Any:
        url = shared_servers("passing", 2).url
        async with fastmcp.Client(url, mode="legacy") as session:  # the initialize handshake
            return session.initialize_result.server_info

    info = asyncio.run(server_info())
    assert (info.name, info.version) == ("ssebench", version("ssebench"))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize(("kind", "level"), CASES)
def test_result_is_exactly_the_check_text(
    shared_servers: Any, client: str, mode: str, kind: str, level: int
) -> None:
    server = shared_servers(kind, level)
    expected = check_text(server.task, level, server.env)
    result = asyncio.run(CLIENTS[client](server.url, mode))
    assert [block.type for block in result.content] == ["text"]
    assert result.content[0].text == expected
    assert result.structured_content is None
    assert result.is_error is False


def test_failing_texts_differ_by_level(shared_servers: Any) -> None:
    """Guards the comparison above: the fixtures really give four different reports."""
    texts = {
        check_text(shared_servers(k, lv).task, lv, shared_servers(k, lv).env) for k, lv in CASES
    }
    assert len(texts) == 4
    assert any(text.startswith("test_patch result: FAILED.") for text in texts)


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_progress_names_the_checks_and_withholds_the_rest(shared_servers: Any, client: str) -> None:
    server = shared_servers("passing", 2)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def call() -> None:
        if client == "fastmcp":
            async with fastmcp.Client(server.url) as session:
                await session.call_tool_mcp("test_patch", {}, progress_handler=on_progress)
        else:
            async with mcp.Client(server.url) as session:
                await session.call_tool("test_patch", {}, progress_callback=on_progress)

    asyncio.run(call())
    messages = [message for _, _, message in seen]
    assert messages == [
        "build: started",
        "build: passed",
        "functional tests: started",
        "functional tests: passed",
        "finished",
    ]
    values = [progress for progress, _, _ in seen]
    assert values == sorted(set(values)), "progress must increase with every notification"
    # The total counts the enabled cases and the report: the PoCs and intent test stay unknown.
    assert {total for _, total, _ in seen} == {3}
    assert values[-1] == 3


def test_progress_at_level_0_reports_each_poc(shared_servers: Any) -> None:
    server = shared_servers("failing", 0)
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async def call() -> None:
        async with fastmcp.Client(server.url) as session:
            await session.call_tool_mcp("test_patch", {}, progress_handler=on_progress)

    asyncio.run(call())
    assert "PoCs: case 1 of 3 started" in seen
    assert "PoCs: case 2 of 3 FAILED" in seen
    assert "PoCs: case 3 of 3 started" not in seen  # the first PoC that still triggers ends it
    assert seen[-2:] == ["functional tests: FAILED", "finished"]


def test_healthz_and_foreign_origin_and_host(shared_servers: Any) -> None:
    server = shared_servers("passing", 2)
    base = f"http://127.0.0.1:{server.port}"
    assert httpx.get(f"{base}/healthz").status_code == 200
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    foreign = httpx.post(server.url, json=body, headers={**accept, "Origin": "http://evil.example"})
    assert foreign.status_code == 403
    rebound = httpx.post(server.url, json=body, headers={**accept, "Host": "evil.example:3000"})
    assert rebound.status_code == 421
    same = httpx.post(
        server.url, json=body, headers={**accept, "Origin": f"http://localhost:{server.port}"}
    )
    assert same.status_code not in (403, 421)
