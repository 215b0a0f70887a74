"""`ssebench daemon` as careful as `serve`: a web page cannot reach it by DNS rebinding (a
foreign Host gets 421, a foreign Origin 403, in the daemon's JSON error shape, before any route
runs anything), and another address needs --allow-remote and prints a warning."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from ssebench.core.daemons.door import choose_isolation
from ssebench.testing.servers import clean_env, free_port, runner_tree, ssebench_argv
from ssebench.testing.waiting import wait_for

pytestmark = pytest.mark.timeout(120)

# The daemon names its isolation on stderr first, once its port is its own.
ISOLATION = f"ssebench: isolation: {choose_isolation('auto').description}"
BUILD = 'source = "src"\n[checks.build]\nrun = \'touch "$SSE_SOURCE_DIR/built"\'\n'


class Daemon:
    def __init__(self, tmp: Path, *args: str) -> None:
        self.task = tmp / "task"
        (self.task / "src").mkdir(parents=True, exist_ok=True)
        (self.task / "task.toml").write_text(BUILD)
        self.port = free_port()
        self.log = tmp / f"daemon-{self.port}.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                ssebench_argv("daemon", "--task", str(self.task), "--port", str(self.port), *args),
                stdout=out,
                stderr=subprocess.STDOUT,
                env=clean_env(tmp),
            )
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = clean_env(tmp)
        wait_for(
            lambda: "ssebench: daemon for" in self.stderr(),
            30,
            lambda: f"the daemon's start-up line (it said: {self.stderr()})",
            0.05,
            alive=self.proc,
        )

    def stderr(self) -> str:
        return self.log.read_text()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


Start = Callable[..., Daemon]


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Start]:
    started: list[Daemon] = []

    def start(*args: str) -> Daemon:
        started.append(Daemon(tmp_path, *args))
        return started[-1]

    yield start
    for each in started:
        each.stop()


def test_a_foreign_host_or_origin_is_refused_before_anything_runs(daemon: Start) -> None:
    d = daemon()
    run = f"{d.url}/v1/checks/build/cases/0/run"
    rebound = httpx.post(run, headers={"Host": f"evil.example:{d.port}"})
    assert (rebound.status_code, rebound.json()) == (
        421,
        {
            "error": f"Host 'evil.example:{d.port}' does not name this daemon "
            "(--allowed-host adds names)"
        },
    )
    page = httpx.post(run, headers={"Origin": "http://evil.example"})
    assert (page.status_code, page.json()) == (
        403,
        {"error": "requests from 'http://evil.example' are refused"},
    )
    assert httpx.get(f"{d.url}/v1/logs/x", headers={"Origin": "null"}).status_code == 403
    tree = runner_tree(d.env)  # the tree the daemon's cases run on
    assert tree is not None and not (tree / "built").exists()
    same = httpx.post(run, headers={"Origin": f"http://localhost:{d.port}"})
    assert same.status_code == 200 and same.json()["passed"] is True
    assert (tree / "built").exists()
    ready = f"ssebench: daemon for {d.task / 'task.toml'} at {d.url} (difficulty 2)"
    assert d.stderr().splitlines() == [ISOLATION, ready]


def test_allowed_host_admits_a_container_name(daemon: Start) -> None:
    d = daemon("--allowed-host", "task-daemon")
    health = f"{d.url}/v1/health"
    assert httpx.get(health, headers={"Host": f"task-daemon:{d.port}"}).status_code == 200
    assert httpx.get(health, headers={"Host": f"localhost:{d.port}"}).status_code == 200
    assert httpx.get(health, headers={"Host": "other:1"}).status_code == 421


def test_another_address_with_allow_remote_warns_and_stays_guarded(daemon: Start) -> None:
    d = daemon("--host", "0.0.0.0", "--allow-remote")
    assert d.stderr().splitlines()[:2] == [
        ISOLATION,
        (
            "ssebench: warning: serving the daemon (it runs the task's checks and serves their "
            "logs) on 0.0.0.0, reachable from other machines; the Host and Origin checks stay on "
            "(--allowed-host adds names)"
        ),
    ]
    health = f"{d.url}/v1/health"
    assert httpx.get(health).json() == {"status": "ok", "difficulty": 2}
    assert httpx.get(health, headers={"Host": f"evil.example:{d.port}"}).status_code == 421
