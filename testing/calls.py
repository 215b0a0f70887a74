"""test_patch called over MCP with fastmcp's client: the text of its one content block."""

from __future__ import annotations

import asyncio
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import ClientTransport


async def tool_text(client: Client[Any], timeout: float = 60) -> str:
    """Call test_patch on an open session; the answer must be exactly one text block."""
    result = await client.call_tool_mcp("test_patch", {}, timeout=timeout)
    assert [block.type for block in result.content] == ["text"], result.content
    return str(result.content[0].text)  # type: ignore[union-attr]


async def call_async(target: str | ClientTransport, timeout: float = 60) -> str:
    """test_patch in a session of its own, at a URL or through a transport."""
    async with Client(target) as client:
        return await tool_text(client, timeout)


def call(url: str, timeout: float = 60) -> str:
    return asyncio.run(call_async(url, timeout))
