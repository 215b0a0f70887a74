"""Where a test_patch call's milliseconds go: the overhead benchmark's call taken apart.

bench/overhead.py measures what a call of four trivial cases adds over bash. This one runs its
call (commands that take no time) in process (the orchestrator on the case service, no MCP:
over MCP the call costs within a millisecond of this) under each mechanism, and times its
layers, each around the one below it, so each row's own share is its time less the row under:

- the case through the supervisor (`Runner.run`: the standby set going, the command's exec
  chain, its end noticed and answered);
- the case's folders and environment (`CaseService._run`);
- judging the case, its log file, telling the supervisor the coming cases
  (`CaseService.run_and_judge`);
- the call's beginning: its plan's sandboxes asked for, the runner copy's one sync
  (`CaseService.begin`);
- whether the tree changed while the call ran (`CaseService.tree_changed`);
- the failed check's tail (`view_failed_log`); what is left of the call is the orchestrator
  and the report.

Each call is followed by a pause, as an agent reads its report, in which the next call's
sandboxes are made. Figures: medians per call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _common import machine, parser, run, scratch, table
from overhead import command_task, commands

import ssebench.core.orchestrator as orchestrator
from ssebench.core.cli.requests import Basis
from ssebench.core.cli.root import Root
from ssebench.core.daemons.door import ServiceConfig, available, choose_isolation, load_task
from ssebench.core.daemons.inprocess import local_daemon
from ssebench.daemon.confine.user import case_user

LAYERS = {  # a row's name: the layer it times
    "cases through the supervisor": "runner",
    "+ folders, environment": "cases",
    "+ judging, log file, coming cases": "service",
    "the call's begin: plan, one sync": "begin",
    "the tree changed? (its end)": "changed",
    "failed check's tail": "view",
}


def timed(times: dict[str, float], key: str, call: Callable[..., Awaitable[Any]]) -> Any:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await call(*args, **kwargs)
        finally:
            times[key] = times.get(key, 0.0) + time.perf_counter() - started

    return wrapper


async def measure(task: Path, name: str, calls: int, pause: float) -> list[dict[str, float]]:
    """Each call's time and its layers' (seconds, summed over the call's cases)."""
    registry = Root(Basis()).registry  # the installed checks, as serve has them
    loaded = load_task(task / "task.toml", registry.checks)
    found: list[dict[str, float]] = []
    times: dict[str, float] = {}
    config = ServiceConfig(loaded, registry, 0, choose_isolation(name))
    async with local_daemon(config) as service:
        runner = service.place.runner
        runner.run = timed(times, "runner", runner.run)  # type: ignore[method-assign]
        service._run = timed(times, "cases", service._run)  # type: ignore[method-assign]
        service.run_and_judge = timed(times, "service", service.run_and_judge)  # type: ignore[method-assign]
        service.begin = timed(times, "begin", service.begin)  # type: ignore[method-assign]
        service.tree_changed = timed(times, "changed", service.tree_changed)  # type: ignore[method-assign]
        view = orchestrator.view_failed_log
        orchestrator.view_failed_log = timed(times, "view", view)  # type: ignore[assignment]
        try:
            for _ in range(calls):
                times.clear()
                started = time.perf_counter()
                await orchestrator.run_test_patch(registry.checks, 0, service, task / "logs")
                found.append({"call": time.perf_counter() - started, **times})
                await asyncio.sleep(pause)
        finally:
            orchestrator.view_failed_log = view
    return found[len(found) // 4 :]  # the daemon's first calls start its supervisor


def main(args: argparse.Namespace) -> dict[str, object]:
    calls = 6 if args.smoke else args.calls
    names = ["none", *available(case_user())]
    rows: list[tuple[str, str, str]] = [("calls per mechanism (medians per call)", str(calls), "")]
    found: dict[str, dict[str, float]] = {}
    with scratch("ssebench-bench-callparts-") as tmp:
        task = command_task(tmp / "task", commands(0.0))  # overhead.py's call, no sleeps
        for name in names:
            measured = asyncio.run(measure(task, name, calls, args.pause))
            found[name] = {k: statistics.median(m[k] for m in measured) for k in measured[0]}
    for name, medians in found.items():
        rows.append((f"{name}: the call", f"{medians['call'] * 1000:.1f} ms", ""))
        for label, key in LAYERS.items():
            rows.append((f"  {label}", f"{medians.get(key, 0.0) * 1000:.1f} ms", ""))
    print(f"machine: {machine()}")
    print(table("call parts: a test_patch call of four trivial cases, in process", rows))
    return {"medians": found, "met": True}


def cli() -> argparse.ArgumentParser:
    p = parser(__doc__)
    p.add_argument("--calls", type=int, default=40)
    p.add_argument("--pause", type=float, default=0.3, help="seconds an agent reads between calls")
    return p


if __name__ == "__main__":
    run(main, cli())
