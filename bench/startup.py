"""Start-up: `ssebench serve` from process start to its first answered MCP initialize.

The baseline is a minimal FastMCP server with one tool, started the same way (this Python,
`-c`, loopback, Streamable HTTP at /mcp) and timed the same way: from Popen until a POST of
initialize is answered, polling every 5 ms. Pairs alternate which server starts first.
Both start from bytecode, as installed servers do (pip compiles a wheel's modules at install,
fastmcp's as ssebench's; the Docker backend's bundle is compiled too): an editable checkout run
with PYTHONDONTWRITEBYTECODE set, as the benchmark machine's sessions are, would otherwise
compile ssebench's ~70 modules from source at every start, ~50 ms that no installed server
spends, while fastmcp's come compiled. So ssebench's own modules are compiled first, in place.
Target: ratio of the medians <= 1.1.
"""

from __future__ import annotations

import argparse
import compileall
import importlib
import subprocess
import sys
from pathlib import Path

from _common import alternate, machine, median, parser, run, scratch, table, verdict

from ssebench.testing.servers import SSEBENCH, clean_env, free_port, wait_initialize, write_task

TARGET = 1.1
TASK = """
[checks.build]
run = "true"
[checks.functional]
run = "true"
"""
MINIMAL = """
import sys
from fastmcp import FastMCP

mcp = FastMCP("minimal")


@mcp.tool
def hello() -> str:
    return "hello"


mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), path="/mcp",
        show_banner=False, log_level="warning")
"""


def _time_start(argv: list[str], port: int, env: dict[str, str]) -> float:
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        return wait_initialize(proc, f"http://127.0.0.1:{port}/mcp")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def compile_ssebench() -> None:
    """ssebench's modules as bytecode beside their sources (gitignored), as an install has them:
    written whatever PYTHONDONTWRITEBYTECODE says, and read by the servers either way."""
    for package in ("ssebench.core", "ssebench.daemon", "ssebench.plugins"):
        for folder in importlib.import_module(package).__path__:
            compileall.compile_dir(Path(folder), quiet=1)


def main(args: object) -> dict[str, object]:
    smoke = bool(args.smoke)  # type: ignore[attr-defined]
    pairs = 2 if smoke else args.pairs  # type: ignore[attr-defined]
    compile_ssebench()
    with scratch("ssebench-bench-startup-") as tmp:
        task = write_task(tmp / "task", TASK)
        env = clean_env(tmp)

        def ssebench() -> float:
            port = free_port()
            argv = [*SSEBENCH, "serve", "--task", str(task), "--port", str(port)]
            return _time_start([*argv, "--daemon-port", str(free_port())], port, env)

        def minimal() -> float:
            port = free_port()
            return _time_start([sys.executable, "-c", MINIMAL, str(port)], port, env)

        ours, base = alternate(pairs, ssebench, minimal)
    ratio = median(ours) / median(base)
    paired = median([a / b for a, b in zip(ours, base, strict=True)])
    rows = [
        ("pairs", str(pairs), ""),
        ("ssebench serve, median", f"{median(ours):.3f} s", f"(min {min(ours):.3f} s)"),
        ("minimal FastMCP, median", f"{median(base):.3f} s", f"(min {min(base):.3f} s)"),
        ("ratio", f"{ratio:.3f}", f"target <= {TARGET}: {verdict(ratio <= TARGET, smoke)}"),
        ("median of per-pair ratios", f"{paired:.3f}", "(less swayed by the machine's load)"),
    ]
    print(f"machine: {machine()}")
    print(table("start-up: process start to first answered initialize", rows), flush=True)
    return {
        "ssebench_s": median(ours),
        "minimal_s": median(base),
        "ratio": ratio,
        "paired_ratio": paired,
        "met": ratio <= TARGET,
    }


def cli() -> argparse.ArgumentParser:
    p = parser(__doc__)
    p.add_argument("--pairs", type=int, default=21)
    return p


if __name__ == "__main__":
    run(main, cli())
