"""Signals: the time a grade spends reading a patch as data, against git reading the same patch.

A grade of a patch reads it for what a reviewer should look at (evaluate/signals.py) before
anything runs; a 20 MB patch (a vendored library updated, a generated file) must not cost half
a minute of the grade with no progress line. Patches of 10 and 20 MB (smoke: 0.5 and 1 MB), of
many files with text hunks (a C project's edits, names and lines of a real patch's length) and
one binary literal, are read by `find_signals` with the example C task's watch (its PoCs'
bytes, names and hashes, its folders) and by `git apply --stat` (git's own parser, in C: the
baseline, measured in the same run, alternating). Targets: 20 MB in at most 1 s, and linear
(20 MB within 2.5 times 10 MB).
"""

from __future__ import annotations

import argparse
import base64
import random
import statistics
import subprocess
import time
import zlib
from pathlib import Path

from _common import machine, parser, run, scratch, table, verdict

from ssebench.core.cli.requests import Basis
from ssebench.core.cli.root import Root
from ssebench.core.daemons.door import load_task
from ssebench.evaluate.signals import Watch, find_signals
from ssebench.evaluate.watch import watch_for

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "c-rle"
WORDS = ["buf", "len", "count", "size", "offset", "data", "out", "in", "run", "status"]


def text_file(rng: random.Random, index: int, lines: int) -> str:
    path = f"src/lib{index % 40}/part{index}.c"
    body = [f"diff --git a/{path} b/{path}\n", "index 1111111..2222222 100644\n"]
    body += [f"--- a/{path}\n", f"+++ b/{path}\n", f"@@ -1,{lines} +1,{lines} @@\n"]
    for number in range(lines):
        words = " ".join(rng.choice(WORDS) for _ in range(8))
        line = f"\tif ({words} > {number}) return {number}; /* {words} */\n"
        if rng.random() < 0.5:
            body.append(" " + line)
        else:  # a changed line: one out, one in
            body += ["-" + line, "+" + line.replace(">", ">=", 1)]
    return "".join(body)


def binary_file(rng: random.Random, size: int) -> str:
    """A new file as a `GIT binary patch` literal, as `git diff --binary` writes one."""
    data = zlib.compress(rng.randbytes(size))
    lines = []
    for at in range(0, len(data), 52):
        chunk = data[at : at + 52]
        size_char = (
            chr(ord("A") + len(chunk) - 1) if len(chunk) <= 26 else chr(ord("a") + len(chunk) - 27)
        )
        lines.append(size_char + base64.b85encode(chunk, pad=True).decode() + "\n")
    head = "diff --git a/data/blob.bin b/data/blob.bin\nnew file mode 100644\n"
    return (
        head + f"index 0000000..3333333\nGIT binary patch\nliteral {size}\n" + "".join(lines) + "\n"
    )


def make_patch(megabytes: float, seed: int) -> bytes:
    rng = random.Random(seed)
    parts, size, index = [binary_file(rng, 1 << 18)], 0, 0
    size = len(parts[0])
    while size < megabytes * (1 << 20):
        part = text_file(rng, index, 200)
        parts.append(part)
        size += len(part)
        index += 1
    return "".join(parts).encode()


def _git(patch: bytes, path: Path, tmp: Path, watch: Watch) -> float:
    started = time.perf_counter()
    argv = ["git", "apply", "--stat", str(path)]
    subprocess.run(argv, cwd=tmp, capture_output=True, check=True)
    return time.perf_counter() - started


def _signals(patch: bytes, path: Path, tmp: Path, watch: Watch) -> float:
    started = time.perf_counter()
    find_signals(patch, watch)
    return time.perf_counter() - started


def measure(
    tmp: Path, sizes: tuple[float, float], rounds: int
) -> dict[float, tuple[list[float], list[float]]]:
    registry = Root(Basis()).registry  # the installed checks, as grade has them
    watch = watch_for(load_task(EXAMPLE, registry.checks))
    figures: dict[float, tuple[list[float], list[float]]] = {}
    for size in sizes:
        patch = make_patch(size, seed=int(size * 10))
        path = tmp / f"{size}.diff"
        path.write_bytes(patch)
        ours: list[float] = []
        git: list[float] = []
        for index in range(rounds):
            first, second = (_signals, _git) if index % 2 else (_git, _signals)
            for side in (first, second):
                (ours if side is _signals else git).append(side(patch, path, tmp, watch))
        figures[size] = (ours, git)
    return figures


def main(args: argparse.Namespace) -> dict[str, object]:
    smoke = bool(args.smoke)
    sizes, rounds = ((0.5, 1.0), 2) if smoke else ((10.0, 20.0), args.rounds)
    with scratch("ssebench-bench-signals-") as tmp:
        figures = measure(tmp, sizes, rounds)
    rows = [("rounds", str(rounds), "")]
    medians = {size: statistics.median(ours) for size, (ours, _) in figures.items()}
    for size, (_, git) in figures.items():
        rows.append((f"{size:g} MB: find_signals, median", f"{medians[size]:.3f} s", ""))
        rows.append(
            (f"{size:g} MB: git apply --stat, median", f"{statistics.median(git):.3f} s", "")
        )
        rows.append(
            (f"{size:g} MB: ratio to git", f"{medians[size] / statistics.median(git):.2f}", "")
        )
    small, large = sizes
    fast = medians[large] <= 1.0
    linear = medians[large] <= 2.5 * medians[small]
    rows.append((f"{large:g} MB in at most 1 s", f"{medians[large]:.3f} s", verdict(fast, smoke)))
    rows.append((f"{large:g} MB / {small:g} MB", f"{medians[large] / medians[small]:.2f}",
                 f"<= 2.5 (linear) {verdict(linear, smoke)}"))  # fmt: skip
    print(f"machine: {machine()}")
    print(table("signals: reading a patch as data", rows))
    return {"figures": medians, "met": smoke or (fast and linear)}


def cli() -> argparse.ArgumentParser:
    return parser(__doc__, rounds=5)


if __name__ == "__main__":
    run(main, cli())  # type: ignore[arg-type]
