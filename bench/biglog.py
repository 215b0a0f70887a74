"""Big logs: a build that prints 1 GiB and fails, through test_patch over MCP.

The build is `cat` of a file made beforehand (compiler-like lines, a block number every 64 KiB
so misplaced bytes show, and a byte that is not UTF-8 in each block), then `exit 1`. The
baseline copies the same file to another file with cat, in the same run and on the same disk.

Figures: wall time of the call against the copy (pairs alternate), the peak memory (VmHWM) of
`ssebench serve`, which runs the server and the daemon in one process, and whether the saved
full log is byte-identical to what the build printed. Targets: peak <= 150 MB, time <= 3x the
copy, identical.
"""

from __future__ import annotations

import asyncio
import filecmp
import re
import subprocess
import time
from pathlib import Path

import fastmcp
from _common import CALL_TIMEOUT, alternate, machine, median, parser, run, scratch, table, verdict

from ssebench.testing.calls import tool_text
from ssebench.testing.procs import proc_status
from ssebench.testing.servers import clean_env, serving, write_task

MEMORY_TARGET_MB = 150
TIME_TARGET = 3.0
BLOCK = 64 * 1024
LINE = (
    b"cc -O2 -Wall -c src/module.c -o build/module.o: warning: unused variable 'tmp' [-Wunused]\n"
)
SAVED = re.compile(r"Full log available at (\S+)")
TASK = """
[checks.build]
files = ["build-output.bin"]
run = 'cat "$SSE_TASK_DIR/build-output.bin"; exit 1'
"""


def make_output(path: Path, size: int) -> None:
    """`size` bytes of build-like output, each 64 KiB block numbered and holding one 0xff."""
    body = (LINE * (BLOCK // len(LINE) + 1))[: BLOCK - 32]
    with path.open("wb") as out:
        for block in range(size // BLOCK):
            head = f"block {block:010d} \xff\n".encode("latin-1")
            out.write((head + body)[:BLOCK].ljust(BLOCK, b"."))


def main(args: object) -> dict[str, object]:
    smoke = bool(args.smoke)  # type: ignore[attr-defined]
    pairs = 2 if smoke else args.pairs  # type: ignore[attr-defined]
    size = (4 if smoke else args.mib) * 1024 * 1024  # type: ignore[attr-defined]
    with scratch("ssebench-bench-biglog-") as tmp:
        task = write_task(tmp / "task", TASK)
        printed = task / "build-output.bin"
        make_output(printed, size)
        env = clean_env(tmp)
        log_dir = Path(env["MCP_LOG_DIR"])
        copy = tmp / "copy.bin"
        saved_ok: list[bool] = []
        with serving(tmp, task, 2, env=env) as server:

            async def session() -> tuple[list[float], list[float]]:
                async with fastmcp.Client(server.url) as client:
                    loop = asyncio.get_running_loop()

                    def call() -> float:
                        async def timed() -> float:
                            started = time.perf_counter()
                            text = await tool_text(client, CALL_TIMEOUT)
                            seconds = time.perf_counter() - started
                            found = SAVED.search(text)
                            assert found, text[-500:]
                            saved = Path(found.group(1))
                            saved_ok.append(filecmp.cmp(saved, printed, shallow=False))
                            saved.unlink()  # keep the disk from filling over the pairs
                            return seconds

                        return asyncio.run_coroutine_threadsafe(timed(), loop).result()

                    def cat() -> float:
                        started = time.perf_counter()
                        with copy.open("wb") as out:
                            subprocess.run(["cat", str(printed)], stdout=out, check=True)
                        seconds = time.perf_counter() - started
                        copy.unlink()
                        return seconds

                    return await asyncio.to_thread(alternate, pairs, call, cat)

            ours, base = asyncio.run(session())
            peak_kb = proc_status(server.pid)["VmHWM"]
        leftovers = sorted(p.name for p in log_dir.iterdir()) if log_dir.exists() else []
    ratio = median(ours) / median(base)
    peak_mb = peak_kb / 1024
    identical = all(saved_ok) and len(saved_ok) == pairs
    rows = [
        ("pairs", str(pairs), ""),
        ("log size", f"{size / 2**20:.0f} MiB", ""),
        (
            "test_patch over MCP, median",
            f"{median(ours):.2f} s",
            f"({size / 2**20 / median(ours):.0f} MiB/s)",
        ),
        (
            "cat to a file, median",
            f"{median(base):.2f} s",
            f"({size / 2**20 / median(base):.0f} MiB/s)",
        ),
        (
            "ratio",
            f"{ratio:.2f}",
            f"target <= {TIME_TARGET}: {verdict(ratio <= TIME_TARGET, smoke)}",
        ),
        (
            "peak memory (VmHWM), server + daemon",
            f"{peak_mb:.0f} MB",
            f"target <= {MEMORY_TARGET_MB} MB: {verdict(peak_mb <= MEMORY_TARGET_MB, smoke)}",
        ),
        ("saved log byte-identical", "yes" if identical else "NO", f"({len(saved_ok)} of {pairs})"),
    ]
    print(f"machine: {machine()}")
    print(table("big logs: a build that prints a lot and fails", rows), flush=True)
    assert identical, "the saved full log differs from what the build printed"
    assert not leftovers, f"files left in the log folder: {leftovers}"
    return {
        "call_s": median(ours),
        "cat_s": median(base),
        "ratio": ratio,
        "peak_mb": peak_mb,
        "identical": identical,
        "met": ratio <= TIME_TARGET and peak_mb <= MEMORY_TARGET_MB and identical,
    }


def cli() -> object:
    p = parser(__doc__)
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--mib", type=int, default=1024, help="the log's size in MiB")
    return p


if __name__ == "__main__":
    run(main, cli())
