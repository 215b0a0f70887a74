"""A failing build that prints 90 long lines (9,090 words, 1.18 MB): long by its size alone.
Both reference clients, with their 1 MiB limit on one event, get the report, whose tail is the
log's last whole lines within 256 KiB, and the saved file holds the whole log."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ssebench.core.logs import BYTE_LIMIT

from .test_progress import call  # either reference client, as an agent's

pytestmark = pytest.mark.timeout(120)

FAILED_BUILD = (
    "test_patch result: FAILED. The project failed to build. Please reassess the correctness "
    "of your patch.\n\nChecks:\n- build: FAILED\n\nNot available at difficulty level 3 "
    "(BUILD_ONLY): PoCs, intent tests, functional tests. Nothing is reported about them."
)
# Line i: "line<i>" and 100 words of 130 digits each.
BUILD = """
[checks.build]
run = 'for i in $(seq 90); do printf "line$i"; for j in $(seq 100); do printf " %0130d" $j; done; echo; done; exit 1'
"""  # noqa: E501


def expected_log() -> list[str]:
    words = " ".join(f"{j:0130d}" for j in range(1, 101))
    return [f"line{i} {words}" for i in range(1, 91)]


def last_lines_within(lines: list[str], limit: int) -> str:
    """The most whole last lines that fit in `limit` UTF-8 bytes, joined."""
    for n in range(len(lines), 0, -1):
        if len("\n".join(lines[-n:]).encode()) <= limit:
            return "\n".join(lines[-n:])
    return ""


@pytest.mark.parametrize("client", ["mcp-sdk", "fastmcp"])
def test_a_large_few_word_log_reaches_the_client_cut_and_saved(
    tmp_path: Path, serve: Any, client: str
) -> None:
    task = tmp_path / "task"
    (task / "src").mkdir(parents=True)
    (task / "task.toml").write_text(f'source = "src"\n{BUILD}')
    server = serve(args=["--task", str(task), "--difficulty", "3"])
    text = asyncio.run(call(client, server.url, []))
    lines = expected_log()
    log = "\n".join(lines) + "\n"
    assert len(log.split()) == 9_090 and len(log.encode()) > 1024 * 1024  # few words, over 1 MiB
    tail = last_lines_within(lines, BYTE_LIMIT)
    saved = Path(text.rsplit("\n", 1)[-1].removeprefix("Full log available at "))
    assert text == (
        f"{FAILED_BUILD}\n\nTruncated log (build):\n{tail}\n\nFull log available at {saved}"
    )
    assert saved.read_bytes() == log.encode()
    assert saved.read_text().rstrip("\n").endswith(tail)
    print(f"\n{client}: a {len(log.encode())}-byte log, a {len(text.encode())}-byte report")
    assert len(text.encode()) < 1024 * 1024
