"""Isolation's cost per case: the same trivial case confined by each mechanism and unconfined.

Each round runs `true` as a case of one daemon's `Cases` (its own TMPDIR and HOME, the case
supervisor, the log) twice per mechanism, in an order that rotates from round to round: once
with its sandbox prepared beforehand, as the daemon prepares the next case's while idle, and
once cold (`, cold`), the sandbox made on the case's path. The baseline is the same case
unconfined (the supervisor, no sandbox), prepared or cold alike, and, for scale, a bare
`bash -c true` started by subprocess. Figures: the median time of each, and the median time
each mechanism adds to the unconfined case, pair by pair. The overhead benchmark
(bench/overhead.py) measures what that does to a whole test_patch call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import time
from pathlib import Path

from _common import machine, parser, run, scratch, table

from ssebench.core.cli.requests import Basis
from ssebench.core.cli.root import Root
from ssebench.core.daemons.door import ServiceConfig, available, choose_isolation
from ssebench.core.daemons.inprocess import open_service
from ssebench.daemon.confine.user import case_user
from ssebench.daemon.task import load_task


async def measure(tmp: Path, rounds: int) -> dict[str, list[float]]:
    (tmp / "src").mkdir()
    (tmp / "task.toml").write_text('source = "src"\n[checks.build]\nrun = "true"\n')
    registry = Root(Basis()).registry  # the installed checks, as serve has them
    task = load_task(tmp, registry.checks)
    names = ["none", *available(case_user())]
    cases = {
        name: open_service(ServiceConfig(task, registry, None, choose_isolation(name)))
        for name in names
    }
    kinds = [*names, *(f"{name}, cold" for name in names)]
    times: dict[str, list[float]] = {kind: [] for kind in [*kinds, "bare bash -c true"]}
    try:
        for name, each in cases.items():  # start every supervisor before timing anything
            await each.run_command("build", "true", timeout=30, log_path=tmp / f"{name}.log")
        for index in range(rounds):
            order = kinds[index % len(kinds) :] + kinds[: index % len(kinds)]
            for kind in order:
                name = kind.removesuffix(", cold")
                if kind == name:  # as the daemon does after a call: the next one's sandboxes
                    await cases[name].prepare(["build"])
                    await asyncio.sleep(0.05)  # made while the agent reads the report
                started = time.perf_counter()
                run = await cases[name].run_command(
                    "build", "true", timeout=30, log_path=tmp / f"{name}.log"
                )
                times[kind].append(time.perf_counter() - started)
                assert run.exit_code == 0, (kind, run)
            started = time.perf_counter()
            subprocess.run(["bash", "-c", "true"], check=True)
            times["bare bash -c true"].append(time.perf_counter() - started)
    finally:
        for each in cases.values():
            each.close()
    return times


def main(args: object) -> dict[str, object]:
    smoke = bool(args.smoke)  # type: ignore[attr-defined]
    rounds = 5 if smoke else args.rounds  # type: ignore[attr-defined]
    with scratch("ssebench-bench-isolation-") as tmp:
        times = asyncio.run(measure(tmp, rounds))
    base = times["none"]
    rows = [("cases per mechanism", str(rounds), "")]
    for name, values in times.items():
        rows.append((f"{name}, median", f"{statistics.median(values) * 1000:.1f} ms", ""))
    for name in times:
        if name not in ("none", "bare bash -c true"):
            against = times["none, cold"] if name.endswith(", cold") else base
            added = [a - b for a, b in zip(times[name], against, strict=True)]
            rows.append((f"{name} adds, median", f"{statistics.median(added) * 1000:.1f} ms", ""))
    print(f"machine: {machine()}")
    print(table("isolation: one trivial case, confined and not", rows))
    return {"times": times, "met": True}


def cli() -> argparse.ArgumentParser:
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=200)
    return p


if __name__ == "__main__":
    run(main, cli())
