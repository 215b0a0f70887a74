"""What MCP adds to a test_patch call: the same call in process, through MCP in memory, and over
HTTP, each with and without progress notifications.

bench/overhead.py's call over MCP costs 25-35 ms more under bubblewrap than the same call in
process (bench/callparts.py). This one times the call five ways, taking turns, one call each
per round with a pause after it (as an agent reads its report; the next call's sandboxes are
made in it): the orchestrator on an embedded case service; fastmcp's in-memory client on the
server built around that same service (`build_server`), with the progress token every fastmcp
call sends, and without one (the MCP session's own `call_tool`: no notification is sent);
and `ssebench serve` in its own process over Streamable HTTP, with and without the token.
Figures: medians per call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import fastmcp
from _common import CALL_TIMEOUT, machine, parser, run, scratch, table
from overhead import command_task, commands

from ssebench.core import orchestrator
from ssebench.core.cli.requests import Basis
from ssebench.core.cli.root import Root
from ssebench.core.daemons.door import ServiceConfig, choose_isolation, load_task
from ssebench.core.daemons.inprocess import local_daemon
from ssebench.core.server.app import build_server
from ssebench.testing.calls import tool_text
from ssebench.testing.procs import kill_all
from ssebench.testing.servers import clean_env, start_server

Call = Callable[[], Awaitable[object]]


async def untokened(client: fastmcp.Client) -> object:  # type: ignore[type-arg]
    """test_patch with no progress token: the server sends no notification."""
    return await client.session.call_tool("test_patch", {})


async def rounds(ways: dict[str, Call], count: int, pause: float) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {way: [] for way in ways}
    for turn in range(count):
        order = list(ways) if turn % 2 == 0 else list(ways)[::-1]
        for way in order:
            started = time.perf_counter()
            await ways[way]()
            found[way].append(time.perf_counter() - started)
            await asyncio.sleep(pause)
    return {way: times[max(1, count // 4) :] for way, times in found.items()}


async def measure(task: Path, tmp: Path, mechanism: str, count: int, pause: float) -> dict:  # type: ignore[type-arg]
    registry = Root(Basis()).registry
    loaded = load_task(task / "task.toml", registry.checks)
    config = ServiceConfig(loaded, registry, 0, choose_isolation(mechanism))
    how = ["--no-isolation"] if mechanism == "none" else ["--isolation", mechanism]
    server = start_server(tmp, ["--task", str(task), "--difficulty", "0", *how],
                          env=clean_env(tmp), task=task)  # fmt: skip
    try:
        async with local_daemon(config) as service:
            app = build_server(registry.checks, 0, service, task / "logs")
            async with fastmcp.Client(app) as memory, fastmcp.Client(server.url) as http:
                ways: dict[str, Call] = {
                    "in process (orchestrator)": lambda: orchestrator.run_test_patch(
                        registry.checks, 0, service, task / "logs"
                    ),
                    "MCP in memory, progress": lambda: tool_text(memory, CALL_TIMEOUT),
                    "MCP in memory, no progress token": lambda: untokened(memory),
                    "MCP over HTTP (serve), progress": lambda: tool_text(http, CALL_TIMEOUT),
                    "MCP over HTTP, no progress token": lambda: untokened(http),
                }
                return await rounds(ways, count, pause)
    finally:
        server.stop()
        kill_all(task)


def main(args: argparse.Namespace) -> dict[str, object]:
    count = 4 if args.smoke else args.rounds
    args.isolation = args.isolation or ["bubblewrap"]
    rows: list[tuple[str, str, str]] = []
    found: dict[str, dict[str, float]] = {}
    with scratch("ssebench-bench-mcpparts-") as tmp:
        task = command_task(tmp / "task", commands(0.0))
        for mechanism in args.isolation:
            times = asyncio.run(measure(task, tmp, mechanism, count, args.pause))
            found[mechanism] = {way: statistics.median(t) for way, t in times.items()}
            rows.append((f"{mechanism} (calls a way: {len(next(iter(times.values())))})", "", ""))
            base = found[mechanism]["in process (orchestrator)"]
            for way, median in found[mechanism].items():
                rows.append(
                    (f"  {way}", f"{median * 1000:.1f} ms", f"+{(median - base) * 1000:.1f}")
                )
    print(f"machine: {machine()}")
    print(table("MCP parts: a call of four trivial cases, five ways", rows))
    return {"medians": found, "met": True}


def cli() -> argparse.ArgumentParser:
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=24)
    p.add_argument("--pause", type=float, default=0.3, help="seconds an agent reads between calls")
    p.add_argument("--isolation", action="append", help="a mechanism (again for more): bubblewrap")
    return p


if __name__ == "__main__":
    run(main, cli())
