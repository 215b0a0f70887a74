"""The report an agent's client keeps whole: a failing build that prints 100 lines of 12,000
characters (1.2 MB, 100 words) gave a 252 KB report, which Claude Code refused inline and
showed its model as a 2 KB preview without the log's end or the saved file's path. Now the
tail is the log's last whole lines within 64 KiB as JSON writes them, the report as sent stays
near that, and the saved file holds the whole log. Both reference clients read it."""

from __future__ import annotations

import asyncio
import json
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
# Line i: "line<i>:" and 11,991 or so digits, 12,000 characters in all, then a line break.
BUILD = """
[checks.build]
run = 'for i in $(seq 100); do printf "line%03d:" $i; head -c 11992 /dev/zero | tr "\\\\0" 7; echo; done; exit 1'
"""  # noqa: E501


def expected_log() -> list[str]:
    return [f"line{i:03d}:" + "7" * 11_992 for i in range(1, 101)]


def last_lines_within(lines: list[str], limit: int) -> str:
    """The most whole last lines whose text JSON writes in `limit` bytes, joined."""
    for n in range(len(lines), 0, -1):
        if len(json.dumps("\n".join(lines[-n:]), ensure_ascii=False)) - 2 <= limit:
            return "\n".join(lines[-n:])
    return ""


@pytest.mark.parametrize("client", ["mcp-sdk", "fastmcp"])
def test_a_large_build_log_gives_a_report_within_64_kib(
    tmp_path: Path, serve: Any, client: str
) -> None:
    task = tmp_path / "task"
    (task / "src").mkdir(parents=True)
    (task / "task.toml").write_text(f'source = "src"\n{BUILD}')
    server = serve(args=["--task", str(task), "--difficulty", "3"])
    text = asyncio.run(call(client, server.url, []))
    lines = expected_log()
    log = "\n".join(lines) + "\n"
    assert len(lines[0]) == 12_000 and len(log.split()) == 100
    tail = last_lines_within(lines, BYTE_LIMIT)
    assert tail.count("\n") == 4  # five whole lines: 60,004 characters
    saved = Path(text.rsplit("\n", 1)[-1].removeprefix("Full log available at "))
    assert text == (
        f"{FAILED_BUILD}\n\nTruncated log (build):\n{tail}\n\nFull log available at {saved}"
    )
    assert saved.read_bytes() == log.encode()
    sent = len(json.dumps(text, ensure_ascii=False).encode())
    print(f"\n{client}: a {len(log.encode())}-byte log, a report of {sent} bytes as sent")
    assert sent <= BYTE_LIMIT + 1024
