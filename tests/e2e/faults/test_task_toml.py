"""A bad task.toml stops the server before it listens: exit status 2 and one line naming the
file and the key, no port taken, nothing left running. The unit view is in test_task.py; this
is the real command, as the container's entrypoint would start it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssebench.testing.procs import task_processes
from ssebench.testing.servers import clean_env, free_port, port_is_free, run_ssebench, write_task

pytestmark = pytest.mark.timeout(120)

BAD = {
    "malformed": (
        'source = "src"\n[checks.build\nrun = "true"\n',
        "not valid TOML: ",
    ),
    "missing source tree": (
        'source = "no-such-tree"\n[checks.build]\nrun = "true"\n',
        "source: {task}/no-such-tree is not a directory",
    ),
    "timeout of 0": (
        'source = "src"\n[checks.build]\nrun = "true"\ntimeout = 0\n',
        "checks.build.timeout: must be greater than 0 (got 0)",
    ),
    "negative timeout": (
        'source = "src"\n[checks.build]\nrun = "true"\ntimeout = -5\n',
        "checks.build.timeout: must be greater than 0 (got -5)",
    ),
}


def _refused(tmp_path: Path, kind: str, command: list[str]) -> None:
    text, problem = BAD[kind]
    task = write_task(tmp_path / "task", text, source=None)
    ports = [free_port(), free_port()]
    where = ["--port", str(ports[0])]
    if command == ["serve"]:
        where += ["--daemon-port", str(ports[1])]
    done = run_ssebench(*command, "--task", str(task), *where, env=clean_env(tmp_path), timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(f"ssebench: error: {task / 'task.toml'}: ")
    assert problem.format(task=task) in line
    assert all(port_is_free(port) for port in ports)
    assert task_processes(task) == []


@pytest.mark.parametrize("kind", list(BAD))
def test_serve_refuses_a_bad_task(tmp_path: Path, kind: str) -> None:
    _refused(tmp_path, kind, ["serve"])


@pytest.mark.parametrize("kind", ["malformed", "timeout of 0"])
def test_the_daemon_refuses_a_bad_task(tmp_path: Path, kind: str) -> None:
    _refused(tmp_path, kind, ["daemon"])
