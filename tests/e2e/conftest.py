"""Real servers for the end-to-end tests: `ssebench serve` in a subprocess on free ports."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.testing.servers import Server, start_server

from .recordrun import RecordRun, record_run
from .tasks import make_task


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[object]:
    """Start servers for one test: `serve(kind, level)` or `serve(args=[...])`; all stop after."""
    started: list[Server] = []

    def start(
        kind: str | None = None,
        level: int | None = None,
        *,
        args: list[str] | None = None,
        **options: object,
    ) -> Server:
        task = make_task(tmp_path / f"task-{kind}-{len(started)}", kind) if kind else None
        argv = list(args or [])
        if task is not None:
            argv += ["--task", str(task)]
        if level is not None:
            argv += ["--difficulty", str(level)]
        server = start_server(tmp_path, argv, task=task, **options)  # type: ignore[arg-type]
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def shared_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """Servers shared by the whole run, keyed by (task, level): each start costs seconds."""
    tmp = tmp_path_factory.mktemp("shared")
    servers: dict[tuple[str, int], Server] = {}

    def get(kind: str, level: int) -> Server:
        if (kind, level) not in servers:
            task = make_task(tmp / f"{kind}-{level}", kind)
            args = ["--task", str(task), "--difficulty", str(level)]
            # A folder (and so a TMPDIR) of its own: a test finds its server's runner copy there.
            own = tmp / f"{kind}-{level}-server"
            own.mkdir()
            servers[kind, level] = start_server(own, args, task=task)
        return servers[kind, level]

    yield get
    for server in servers.values():
        server.stop()


@pytest.fixture(scope="session")
def recorded_run(tmp_path_factory: pytest.TempPathFactory) -> RecordRun:
    """The run an evaluator compares agents from (tests/e2e/recordrun.py), graded once for the
    tests that read it; a test that changes it works on a copy."""
    return record_run(tmp_path_factory.mktemp("record"))


@pytest.fixture
def passable_tmp() -> Iterator[Path]:
    """A folder in /tmp the agent's user (uid 1000) may pass, pytest's own being root's alone:
    where its own folders lie, and where a grade applies a patch as the tree's owner."""
    folder = Path(tempfile.mkdtemp(prefix="ssebench-test-", dir="/tmp"))
    folder.chmod(0o711)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
