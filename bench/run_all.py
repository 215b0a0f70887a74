"""Run every benchmark: `--smoke` (tiny sizes, seconds; CI) or full size, figures to RESULTS.md.

    python bench/run_all.py --smoke                      # proves they all still run
    python bench/run_all.py --results bench/RESULTS.md   # full size; rewrites the figures block

Smoke mode judges nothing about speed; it fails only if a benchmark cannot run or finds a
wrong answer. Full size prints whether each target was met and exits 1 if one was missed.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import re
import shlex
import sys
import time
from pathlib import Path
from typing import TextIO

sys.path.insert(0, str(Path(__file__).parent))

import backends
import biglog
import callparts
import casespans
import grading
import importing
import isolation
import mcpparts
import overhead
import responsiveness
import runnercopy
import sanitizerlog
import signals
import startup
from _common import machine

BENCHMARKS = {
    "overhead": overhead,
    "callparts": callparts,
    "casespans": casespans,
    "mcpparts": mcpparts,
    "startup": startup,
    "biglog": biglog,
    "responsiveness": responsiveness,
    "isolation": isolation,
    "sanitizerlog": sanitizerlog,
    "runnercopy": runnercopy,
    "grading": grading,
    "signals": signals,
    "backends": backends,
    "importing": importing,
}
BLOCK = re.compile(r"(<!-- figures:begin -->\n).*?(<!-- figures:end -->)", re.DOTALL)


class _Tee(io.TextIOBase):
    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
            stream.flush()
        return len(text)


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--smoke", action="store_true", help="tiny sizes; judge nothing")
    cli.add_argument("--only", action="append", choices=list(BENCHMARKS), help="repeatable")
    cli.add_argument("--results", type=Path, help="rewrite the figures block of this file")
    args = cli.parse_args()
    names = args.only or list(BENCHMARKS)
    captured = io.StringIO()
    missed = []
    started = time.monotonic()
    for name in names:
        module = BENCHMARKS[name]
        argv = ["--smoke"] if args.smoke else []
        print(f"\n== {name} ==", flush=True)
        with contextlib.redirect_stdout(_Tee(sys.stdout, captured)):
            print(f"$ python bench/{name}.py {' '.join(argv)}".rstrip())
            result = module.main(module.cli().parse_args(argv))
            print()
        if not args.smoke and not result.get("met"):
            missed.append(name)
    seconds = time.monotonic() - started
    print(f"ran {len(names)} benchmarks in {seconds:.0f} s" + (" (smoke)" if args.smoke else ""))
    if missed:
        print(f"targets missed: {', '.join(missed)}")
    if args.results is not None:
        command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
        when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        block = (
            f"Produced by `{command}` on {when}, {seconds:.0f} s.\n"
            f"Machine: {machine()}.\n\n```\n{captured.getvalue().rstrip()}\n```\n"
        )
        text = args.results.read_text()
        if not BLOCK.search(text):
            raise SystemExit(f"{args.results}: no <!-- figures:begin/end --> block")
        args.results.write_text(BLOCK.sub(lambda m: m.group(1) + block + m.group(2), text))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
