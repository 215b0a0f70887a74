"""What every benchmark shares: real servers on free ports, MCP calls, process figures, tables.

The benchmarks start `ssebench serve` exactly as a user would (a subprocess of this Python),
talk to it with the fastmcp client over Streamable HTTP, and read memory and descriptors from
/proc. Figures are medians over alternating pairs, so a noisy machine slows both sides alike.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from ssebench.core.cli.run import INITIALIZE  # the request `ssebench run` waits with

CLI = [sys.executable, "-c", "from ssebench.core.cli import main; main()"]
ACCEPT = {"Accept": "application/json, text/event-stream"}


def parser(doc: str | None) -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    cli.add_argument("--smoke", action="store_true", help="tiny sizes; proves it runs, no targets")
    return cli


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


def clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The server's environment: our own log folder, no inherited ssebench settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SSE_") and k != "MCP_LOG_DIR"}
    env["MCP_LOG_DIR"] = str(tmp / "mcp-logs")
    env.update(extra)
    return env


def make_task(root: Path, toml: str) -> Path:
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "task.toml").write_text(f'source = "src"\n{toml}', encoding="utf-8")
    return root


def answers_initialize(client: httpx.Client, url: str) -> bool:
    try:
        response = client.post(url, json=INITIALIZE, headers=ACCEPT)
    except httpx.HTTPError:
        return False
    return response.status_code == 200 and '"protocolVersion"' in response.text


def wait_initialize(proc: subprocess.Popen[bytes], url: str, limit: float = 60.0) -> float:
    """Seconds until `url` answers an MCP initialize, polling every 5 ms."""
    started = time.monotonic()
    with httpx.Client(timeout=5.0, trust_env=False) as client:
        while not answers_initialize(client, url):
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with status {proc.returncode}")
            if time.monotonic() - started > limit:
                raise RuntimeError(f"{url} did not answer initialize within {limit} s")
            time.sleep(0.005)
    return time.monotonic() - started


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    port: int
    stderr_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextlib.contextmanager
def serving(
    task: Path, level: int, tmp: Path, env: dict[str, str] | None = None
) -> Iterator[Server]:
    """`ssebench serve --task TASK` (embedded daemon) on free ports, answering before we go on."""
    port = free_port()
    args = ["serve", "--task", str(task), "--difficulty", str(level)]
    args += ["--port", str(port), "--daemon-port", str(free_port())]
    stderr_path = tmp / f"serve-{port}.log"
    with stderr_path.open("wb") as err:
        proc = subprocess.Popen(
            [*CLI, *args],
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=subprocess.STDOUT,
            env=env if env is not None else clean_env(tmp),
        )
    server = Server(proc, port, stderr_path)
    try:
        wait_initialize(proc, server.url)
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)


async def call_text(client: object, timeout: float = 3600) -> str:
    result = await client.call_tool_mcp("test_patch", {}, timeout=timeout)  # type: ignore[attr-defined]
    return str(result.content[0].text)


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (kB) of a live process."""
    figures = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            figures[name] = int(value.split()[0])
    return figures


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


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
