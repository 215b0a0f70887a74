"""The sanitizer report channel's cost per case: a trivial case and an ASan-crashing one, with it
and without it, under each mechanism this machine has.

Each case runs through the trusted core's door (a `Runner` and its case supervisor), as the
daemon's cases do, in a case folder of its own made for it. With the channel, its environment
is what a case gets (daemon/sanitizers.py): ASan's report goes to the case's report folder,
which the supervisor watches and copies into the log, and its status is the case's N. Without
it, the same case has no sanitizer variable: the report goes to stderr, the log's pipe, as it
did before, and ASan exits 1. The supervisor sets up its watch of the report folder for every
case, so the "without" side still pays that: it is measured alone (`watch alone`, in process:
the folder watched, looked at once at the end, closed), and the channel's whole cost per case
is the difference of the medians plus it. Pairs alternate which side goes first.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import time
import uuid
from pathlib import Path

from _common import machine, parser, run, table

from ssebench.core.daemons.door import available, choose_isolation
from ssebench.daemon.confine.inotify import Inotify
from ssebench.daemon.confine.mechanism import Folders
from ssebench.daemon.confine.policy import Grant, Policy, system_paths
from ssebench.daemon.confine.reports import Reports
from ssebench.daemon.confine.runner import Runner
from ssebench.daemon.confine.user import case_user, own_user
from ssebench.daemon.guard import make_folder, remove_folder, remove_tree
from ssebench.daemon.sanitizers import EXIT_CODES, report_options

CRASH = """#include <stdlib.h>
#include <string.h>
int main(void) { char *copy = malloc(4); strcpy(copy, "overflowing"); free(copy); return 0; }
"""
KINDS = {"trivial": "true", "asan": "./crash"}


class Bench:
    """One mechanism's runner, its tree (the crashing program built in it) and case folders."""

    def __init__(self, mechanism: str, root: Path) -> None:
        self.user = case_user() if mechanism != "none" else own_user()
        self.runner = Runner(choose_isolation(mechanism), self.user)
        self.root = root
        self.tree = root / f"tree-{mechanism}"
        self.tree.mkdir()
        (self.tree / "crash.c").write_text(CRASH)
        build = ["gcc", "-fsanitize=address", "-w", "-o", "crash", "crash.c"]
        subprocess.run(build, cwd=self.tree, check=True)
        if self.user.switched:
            os.chown(self.tree, self.user.uid, self.user.gid)
        tree = str(self.tree)
        self.policy = Policy(system=system_paths(), writable=(Grant(tree, tree),))

    async def case(self, kind: str, channel: bool) -> float:
        folders = Folders(str(self.root / uuid.uuid4().hex))
        folders.make(self.user)
        env = {"PATH": "/usr/bin:/bin", "TMPDIR": folders.tmp, "HOME": folders.home}
        code = EXIT_CODES[0]
        if channel:
            env |= report_options(env, folders.reports, code)
        log = Path(folders.root + ".log")
        try:
            started = time.perf_counter()
            end = await self.runner.run(
                KINDS[kind], self.policy, cwd=self.tree, env=env, timeout=60, log_path=log,
                case_dir=Path(folders.root),
            )  # fmt: skip
            seconds = time.perf_counter() - started
            text = log.read_text(errors="replace")
        finally:
            log.unlink(missing_ok=True)
            remove_tree(Path(folders.root))
        expected = (0, "") if kind == "trivial" else ((code if channel else 1), "AddressSanitizer")
        assert (end.exit_code, expected[1] in text) == (expected[0], True), (kind, channel, end)
        return seconds


def watch_alone(folder: Path, rounds: int) -> float:
    """Seconds the supervisor spends on an empty report folder per case (median)."""
    folder.mkdir()
    times = []
    events = Inotify()  # one for the supervisor's life
    try:
        for _ in range(rounds):
            started = time.perf_counter()
            reports = Reports(str(folder), os.geteuid(), events)
            reports.take(1 << 30, final=True)
            reports.close()
            times.append(time.perf_counter() - started)
    finally:
        events.close()
    return statistics.median(times)


async def measure(root: Path, pairs: int) -> dict[str, list[float]]:
    names = ["none", *available(case_user())]
    times: dict[str, list[float]] = {}
    for name in names:
        bench = Bench(name, root)
        try:
            for kind in KINDS:
                await bench.case(kind, True)  # the supervisor started, the binary in the cache
                sides = {f"{name}, {kind}, with": True, f"{name}, {kind}, without": False}
                for key in sides:
                    times[key] = []
                for index in range(pairs):
                    order = list(sides.items()) if index % 2 == 0 else list(sides.items())[::-1]
                    for key, channel in order:
                        times[key].append(await bench.case(kind, channel))
        finally:
            bench.runner.close()
    return times


def main(args: object) -> dict[str, object]:
    smoke = bool(args.smoke)  # type: ignore[attr-defined]
    pairs = 3 if smoke else args.pairs  # type: ignore[attr-defined]
    root = make_folder("ssebench-bench-sanitizerlog-", reachable=True)
    try:
        times = asyncio.run(measure(root, pairs))
        watch = watch_alone(root / "watched", 20 if smoke else 2000)
    finally:
        remove_folder(root, remove_tree)
    rows = [("pairs per case", str(pairs), ""), ("watch alone", f"{watch * 1e6:.0f} us", "")]
    for key in [k for k in times if k.endswith(", with")]:
        base = key.removesuffix(", with")
        with_, without = (statistics.median(times[f"{base}, {s}"]) for s in ("with", "without"))
        rows.append((f"{base}: with the channel", f"{with_ * 1000:.1f} ms", ""))
        rows.append((f"{base}: without", f"{without * 1000:.1f} ms", ""))
        added = (with_ - without + watch) * 1000
        rows.append((f"{base}: added (+ watch alone)", f"{added:.1f} ms", ""))
        rows.append((f"{base}: ratio with / without", f"{with_ / without:.3f}", ""))
    print(f"machine: {machine()}")
    print(table("sanitizer report channel: one case, with it and without", rows))
    return {"times": times, "watch": watch, "met": True}


def cli() -> argparse.ArgumentParser:
    p = parser(__doc__)
    p.add_argument("--pairs", type=int, default=40)
    return p


if __name__ == "__main__":
    run(main, cli())
