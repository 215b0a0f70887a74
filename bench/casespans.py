"""Where one trivial case's milliseconds go, step by step, under each mechanism.

bench/callparts.py times a call's layers; this one takes its cases apart. It runs the same
call (overhead.py's four checks, commands that take no time) in process, with the case
supervisor started as bench/_supervisorspans.py (the trusted core's steps wrapped, not edited)
and the daemon's side wrapped here, each step a span of `time.perf_counter_ns` (CLOCK_MONOTONIC
in both processes: one time line). Each case's spans are those that begin while it runs
(`run_and_judge`); the gaps between them (a message crossing the socket and the supervisor
waking, the shell's exec chain, its end noticed) are rows of their own. Figures: medians over
the cases of every call but the first quarter's (the supervisor starting), per mechanism.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import machine, parser, run, scratch, table
from overhead import command_task, commands

import ssebench.daemon.confine.runner as runner_module
from ssebench.core import orchestrator
from ssebench.core.cli.requests import Basis
from ssebench.core.cli.root import Root
from ssebench.core.daemons.door import ServiceConfig, available, choose_isolation, load_task
from ssebench.core.daemons.inprocess import local_daemon
from ssebench.daemon.confine.user import case_user

Span = tuple[str, int, int]
CASE = "case: run_and_judge"
CALL = "the call (four cases, in process)"
# Rows made of two points: (label, from, to); a point is a span's start ("<") or end (">").
GAPS = [
    ("daemon: before the runner (spool, tree check)", f"<{CASE}", "<runner.run"),
    ("daemon: folders taken, environment, reads", "<case._run", "<runner.run"),
    ("runner: log opened, Run sent", "<runner.run", ">send Run"),
    ("Run crosses to the supervisor (wake-up)", ">send Run", "<sup: launch"),
    ("supervisor: the case started (Started sent)", "<sup: launch", ">sup: launch"),
    ("the shell's exec chain and `true` (ignite to reaped)", ">sup: ignite", ">shell reaped"),
    ("its end: reaped to finish begun (kill_all, EOF)", ">shell reaped", "<sup: finish"),
    ("its end: finish (reports, /tmp, log closed)", "<sup: finish", ">sup: finish"),
    ("Ended crosses to the daemon", ">sup: finish", ">got Ended"),
    ("runner: Ended to its return", ">got Ended", ">runner.run"),
    ("daemon: after the runner (judge, coming cases)", ">runner.run", f">{CASE}"),
    ("the case, all in", f"<{CASE}", f">{CASE}"),
]


class Recorder:
    def __init__(self) -> None:
        self.spans: list[Span] = []

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        call: Callable[..., Any] = getattr(owner, attr)
        spans = self.spans

        if asyncio.iscoroutinefunction(call):

            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter_ns()
                try:
                    return await call(*args, **kwargs)
                finally:
                    spans.append((name, start, time.perf_counter_ns()))
        else:

            def wrapper(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
                start = time.perf_counter_ns()
                try:
                    return call(*args, **kwargs)
                finally:
                    spans.append((name, start, time.perf_counter_ns()))

        setattr(owner, attr, wrapper)

    def point(self, name: str) -> None:
        now = time.perf_counter_ns()
        self.spans.append((name, now, now))


def instrument(service: Any, rec: Recorder) -> None:
    runner = service.place.runner
    rec.wrap(service, "run_and_judge", CASE)
    rec.wrap(service, "_run", "case._run")
    rec.wrap(runner, "run", "runner.run")
    send = runner._send

    async def sending(message: Any, fds: Any = None) -> None:
        await send(message, fds)
        if type(message).__name__ == "Run":
            rec.point("send Run")

    runner._send = sending
    give = runner._ended.give

    def got(key: str, answer: Any) -> None:
        rec.point("got Ended")
        give(key, answer)

    runner._ended.give = got


async def measure(task: Path, name: str, calls: int, pause: float, out: Path) -> list[Span]:
    registry = Root(Basis()).registry
    loaded = load_task(task / "task.toml", registry.checks)
    rec = Recorder()
    config = ServiceConfig(loaded, registry, 0, choose_isolation(name))
    out.write_bytes(b"")
    async with local_daemon(config) as service:
        instrument(service, rec)
        for _ in range(calls):
            start = time.perf_counter_ns()
            await orchestrator.run_test_patch(registry.checks, 0, service, task / "logs")
            rec.spans.append((CALL, start, time.perf_counter_ns()))
            await asyncio.sleep(pause)
    theirs = [line.rsplit(" ", 2) for line in out.read_text().splitlines()]
    return rec.spans + [(n, int(a), int(b)) for n, a, b in theirs]


def per_case(spans: list[Span], skip: int) -> dict[str, list[float]]:
    """Each row's milliseconds in each case (the first `skip` cases left out)."""
    cases = sorted((a, b) for n, a, b in spans if n == CASE)[skip:]
    rows: dict[str, list[float]] = {}
    for start, end in cases:
        inside = [s for s in spans if start <= s[1] <= end]
        points: dict[str, int] = {}
        sums: dict[str, float] = {}
        for n, a, b in inside:
            points.setdefault(f"<{n}", a)
            points[f">{n}"] = b
            if n.startswith(("sup:", "ahead:")):
                sums[n] = sums.get(n, 0.0) + (b - a) / 1e6
        for label, first, last in GAPS:
            if first in points and last in points:
                rows.setdefault(label, []).append((points[last] - points[first]) / 1e6)
        for n, ms in sums.items():
            rows.setdefault("  " + n, []).append(ms)
    begun = cases[0][0] if cases else 0
    rows["(per call) " + CALL] = [(b - a) / 1e6 for n, a, b in spans if n == CALL and a >= begun]
    ahead = [s for s in spans if s[0].startswith("ahead:")]
    for n in sorted({s[0] for s in ahead}):
        each = [(b - a) / 1e6 for m, a, b in ahead if m == n]
        rows.setdefault("(between calls) " + n, []).extend(each)
    return rows


def main(args: argparse.Namespace) -> dict[str, object]:
    calls = 4 if args.smoke else args.calls
    names = ["none", *available(case_user())]
    # Each column's cases, and with --before the same with kill_all as it was, taking turns.
    columns = [(n, w) for n in names for w in (["now", "before"] if args.before else ["now"])]
    rows: dict[str, dict[str, list[float]]] = {f"{n}/{w}": {} for n, w in columns}
    here = str(Path(__file__).resolve().parent / "_supervisorspans.py")
    plain, runner_module.SUPERVISOR = runner_module.SUPERVISOR, [sys.executable, "-I", here]
    try:
        with scratch("ssebench-bench-casespans-") as tmp:
            task = command_task(tmp / "task", commands(0.0))
            os.environ["SSEBENCH_SPANS"] = str(tmp / "spans")
            for turn in range(args.turns):
                for name, way in columns if turn % 2 == 0 else columns[::-1]:
                    os.environ["SSEBENCH_SPANS_BEFORE"] = "1" if way == "before" else ""
                    spans = asyncio.run(measure(task, name, calls, args.pause, tmp / "spans"))
                    for row, ms in per_case(spans, skip=calls).items():  # the first quarter's
                        rows[f"{name}/{way}"].setdefault(row, []).extend(ms)
    finally:  # bench/run_all.py runs others after it, in this process
        runner_module.SUPERVISOR = plain
        for name in ("SSEBENCH_SPANS", "SSEBENCH_SPANS_BEFORE"):
            os.environ.pop(name, None)
    found = {c: {row: statistics.median(ms) for row, ms in r.items()} for c, r in rows.items()}
    counts = {c: len(r.get("the case, all in", [])) for c, r in rows.items()}
    labels = list(dict.fromkeys(row for medians in found.values() for row in medians))
    head = "medians per case, ms; cases: " + ", ".join(f"{c} {n}" for c, n in counts.items())
    out = [(head, " | ".join(found), "")]
    for label in labels:
        cells = " | ".join(f"{found[c].get(label, float('nan')):6.2f}" for c in found)
        out.append((label, cells, ""))
    print(f"machine: {machine()}")
    print(table("case spans: one trivial case, step by step, in process", out))
    return {"medians": found, "met": True}


def cli() -> argparse.ArgumentParser:
    p = parser(__doc__)
    p.add_argument("--calls", type=int, default=12, help="calls of four cases per mechanism")
    p.add_argument("--pause", type=float, default=0.3, help="seconds an agent reads between calls")
    p.add_argument("--turns", type=int, default=2, help="rounds over the mechanisms, taking turns")
    p.add_argument(
        "--before", action="store_true", help="also kill_all as it was: a sleep between scans"
    )
    return p


if __name__ == "__main__":
    run(main, cli())
