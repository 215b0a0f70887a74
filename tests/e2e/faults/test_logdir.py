"""The log folder full: the kernel refuses the save mid-file, and the report still has its tail.

The write error is injected for real: the server's RLIMIT_FSIZE is lowered (a prelude), so
writing past 256 KiB fails with EFBIG, as a full disk fails a write with ENOSPC. The build
raises its own soft limit back, so only the server's writes are refused. Both ways a log
reaches the folder are covered: streamed from a daemon elsewhere (sidecar mode) and copied from
the spool of the daemon in the same process (embedded), where MCP_LOG_DIR is put on another
file system (/dev/shm) so the log must be copied rather than linked.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.testing.calls import call
from ssebench.testing.procs import assert_none_left, kill_all
from ssebench.testing.servers import clean_env, free_port, start_daemon, start_server, write_task

from .reports import FAILED_BUILD, LEVEL_3_NOTE, NOT_SAVED

pytestmark = pytest.mark.timeout(120)

LIMIT = 256 * 1024
PRELUDE = f"import resource; resource.setrlimit(resource.RLIMIT_FSIZE, ({LIMIT}, -1))"
LINES = 100_000  # about 590 KB: past the limit
TASK = f"""
[checks.build]
run = 'ulimit -S -f unlimited; seq {LINES}; exit 1'
"""


def _expected() -> str:
    tail = "\n".join(str(n) for n in range(LINES - 99, LINES + 1))
    head = f"{FAILED_BUILD}\n\nChecks:\n- build: FAILED\n\n{LEVEL_3_NOTE}"
    return f"{head}\n\nTruncated log (build):\n{tail}\n\n{NOT_SAVED}"


def _shm_folder() -> Iterator[Path]:
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat("/tmp").st_dev:
        pytest.skip("needs /dev/shm on a file system of its own")
    folder = shm / f"ssebench-faults-{uuid.uuid4().hex}"
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def shm_folder() -> Iterator[Path]:
    yield from _shm_folder()


def _twice_not_saved(url: str, log_dir: Path, task: Path) -> None:
    for _ in range(2):  # the next call is answered the same way
        assert call(url) == _expected()
        assert not log_dir.exists() or not list(log_dir.iterdir()), "a partial log was left"
    assert_none_left(task)


def test_full_while_streaming_from_a_daemon_elsewhere(tmp_path: Path) -> None:
    task = write_task(tmp_path / "task", TASK)
    port = free_port()
    daemon = start_daemon(tmp_path, task, port, clean_env(tmp_path))
    log_dir = tmp_path / "mcp-logs"
    server = start_server(
        tmp_path,
        ["--daemon-url", f"http://127.0.0.1:{port}", "--difficulty", "3"],
        env=clean_env(tmp_path, MCP_LOG_DIR=str(log_dir)),
        prelude=PRELUDE,
        embedded=False,
    )
    try:
        _twice_not_saved(server.url, log_dir, task)
        assert "Traceback" not in server.stderr()
    finally:
        server.stop()
        daemon.terminate()
        daemon.wait(10)
        kill_all(task)


def test_full_while_copying_from_the_embedded_daemon(tmp_path: Path, shm_folder: Path) -> None:
    task = write_task(tmp_path / "task", TASK)
    env = clean_env(tmp_path, MCP_LOG_DIR=str(shm_folder))
    server = start_server(
        tmp_path, ["--task", str(task), "--difficulty", "3"], env=env, prelude=PRELUDE
    )
    try:
        _twice_not_saved(server.url, shm_folder, task)
        assert "Traceback" not in server.stderr()
    finally:
        server.stop()
        kill_all(task)
