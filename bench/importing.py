"""Importing at scale: a whole checkout of ARVO's index in one command.

A checkout in ARVO-Meta's layout of 5,000 generated records (ssebench.testing.arvometa: every
real key set and sanitizer, nine in ten with a patch file) imported by `ssebench import arvo
CHECKOUT --out OUT`, as a user runs it, a process of its own, into a fresh OUT each time;
against the baseline, a process of the same Python that `json.load`s the same files one by one
and does nothing else. Pairs alternate which side goes first. The import's peak memory (its
max RSS) says whether it holds the records at once. Target: the import within 30 s on this
machine (the issue's "well under a minute on 2 cores").
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import alternate, machine, median, parser, run, scratch, table, verdict

from ssebench.testing import arvometa
from ssebench.testing.servers import ssebench_argv

TARGET_SECONDS = 30.0
LOAD_LOOP = (
    "import json, pathlib, sys\n"
    "for path in sorted(pathlib.Path(sys.argv[1]).glob('*.json')):\n"
    "    with open(path, encoding='utf-8') as f:\n"
    "        json.load(f)\n"
)


def timed(argv: list[str]) -> tuple[float, int]:
    """Seconds `argv` takes to end, and its max RSS in KiB; it must end with 0."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    errors = proc.stderr.read().decode() if proc.stderr else ""
    assert proc.returncode == 0, errors
    return seconds, usage.ru_maxrss


def measure(root: Path, records: int, pairs: int) -> tuple[list[float], list[float], int]:
    """The import's seconds and the load loop's, pair by pair, and the import's peak KiB."""
    checkout = arvometa.generate(root / "ARVO-Meta", records)
    out = root / "out"
    peaks: list[int] = []

    def importing() -> float:
        shutil.rmtree(out, ignore_errors=True)
        seconds, peak = timed(ssebench_argv("import", "arvo", str(checkout), "--out", str(out)))
        peaks.append(peak)
        assert len(os.listdir(out)) == records
        return seconds

    def loading() -> float:
        return timed([sys.executable, "-c", LOAD_LOOP, str(checkout / "meta")])[0]

    imports, loads = alternate(pairs, importing, loading)
    return imports, loads, max(peaks)


def main(args: argparse.Namespace) -> dict[str, object]:
    smoke = bool(args.smoke)
    records, pairs = (60, 1) if smoke else (args.records, args.pairs)
    with scratch("ssebench-bench-importing-") as root:
        imports, loads, peak = measure(root, records, pairs)
    took, read = median(imports), median(loads)
    met = took <= TARGET_SECONDS
    rows = [
        ("records", f"{records:,}", ""),
        ("pairs", str(pairs), ""),
        ("ssebench import arvo", f"{took:.2f} s", f"target <= {TARGET_SECONDS:.0f} s: "
         + verdict(met, smoke)),
        ("json.load loop", f"{read:.2f} s", ""),
        ("ratio", f"{took / read:.1f}", ""),
        ("records per second", f"{records / took:,.0f}", ""),
        ("import's peak memory (max RSS)", f"{peak / 1024:.0f} MB", ""),
    ]  # fmt: skip
    print(f"machine: {machine()}")
    print(table("importing: a whole ARVO-Meta checkout in one command", rows))
    return {"import": took, "load": read, "met": met or smoke}


def cli() -> argparse.ArgumentParser:
    p = parser(__doc__)
    p.add_argument("--records", type=int, default=5000)
    p.add_argument("--pairs", type=int, default=3)
    return p


if __name__ == "__main__":
    run(main, cli())
