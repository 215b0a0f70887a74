"""What every benchmark shares besides the test helpers: the command line, figures, tables.

The benchmarks start `ssebench serve` exactly as a user would (a subprocess of this Python) with
the helpers the tests use (`ssebench.testing.servers`, `.procs`, `.calls`), talk to it with the
fastmcp client over Streamable HTTP, and read memory and descriptors from /proc. Figures are
medians over alternating pairs, so a noisy machine slows both sides alike.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

CALL_TIMEOUT = 3600.0  # seconds a benchmark's test_patch call may take (a 1 GiB log does)
# The tree as shipped, graded: a patch that adds a file no check reads. (An empty patch is not
# graded at all, as SWE-bench counts it; the grading benchmarks measured it graded.)
AS_SHIPPED = "--- /dev/null\n+++ b/graded.txt\n@@ -0,0 +1 @@\n+graded\n"


def parser(doc: str | None, rounds: int | None = None) -> argparse.ArgumentParser:
    """The benchmark's flags: --smoke always, --rounds with its default where it repeats."""
    cli = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    cli.add_argument("--smoke", action="store_true", help="tiny sizes; proves it runs, no targets")
    if rounds is not None:
        cli.add_argument("--rounds", type=int, default=rounds)
    return cli


def machine() -> str:
    """Cores and memory, for the results."""
    total = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                total = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} cores (nproc {len(os.sched_getaffinity(0))}), {total} RAM, load {load}"
    )


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def alternate(
    pairs: int, first: Callable[[], float], second: Callable[[], float]
) -> tuple[list[float], list[float]]:
    """Run both sides `pairs` times, swapping which goes first each pair."""
    a: list[float] = []
    b: list[float] = []
    for i in range(pairs):
        if i % 2 == 0:
            a.append(first())
            b.append(second())
        else:
            b.append(second())
            a.append(first())
        print(
            f"  pair {i + 1}/{pairs}: {a[-1]:.4f} s vs {b[-1]:.4f} s", file=sys.stderr, flush=True
        )
    return a, b


def table(title: str, rows: Sequence[tuple[str, str, str]]) -> str:
    """A small aligned table: figure, value, target."""
    width = max(len(r[0]) for r in rows)
    vwidth = max(len(r[1]) for r in rows)
    lines = [title]
    for name, value, target in rows:
        lines.append(f"  {name:<{width}}  {value:>{vwidth}}  {target}".rstrip())
    return "\n".join(lines)


def verdict(ok: bool, smoke: bool) -> str:
    if smoke:
        return "(smoke: not judged)"
    return "met" if ok else "MISSED"


def run(
    main: Callable[[argparse.Namespace], dict[str, object]], cli: argparse.ArgumentParser
) -> None:
    """A benchmark's command line: parse, run, and exit 0 (targets are reported, not raised)."""
    main(cli.parse_args())
