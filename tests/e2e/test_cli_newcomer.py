"""What a newcomer typed and got a traceback, a silent start or a puzzle for: daemon URLs that
cannot be reached, a setting checked only sometimes, a misspelt flag, ports that clash, the
registration for another port. One line and exit status 2, or the answer they needed."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ssebench.testing.servers import clean_env, free_port, port_is_free, taken_port
from ssebench.testing.waiting import wait_for

from .tasks import make_task
from .test_cli_inputs import refused

pytestmark = pytest.mark.timeout(120)

Run = Callable[..., subprocess.CompletedProcess[str]]
EXPECTED_URL = (
    "expected an http:// or https:// URL such as http://127.0.0.1:3001, or unix:PATH for a "
    "Unix socket"
)
BAD_URLS = [
    ("http://[::1", "an unclosed [ in its host"),
    ("http://127.0.0.1:99999", "port 99999 is not from 1 to 65535"),
    ("http://127.0.0.1:3001\x01", "a control character or a space in it"),
]


@pytest.mark.parametrize(("url", "problem"), BAD_URLS)
@pytest.mark.parametrize("command", ["serve", "grade", "run"])
def test_a_daemon_url_flag_that_cannot_be_reached(
    run_cli: Run, tmp_path: Path, command: str, url: str, problem: str
) -> None:
    cmd = ["--", "true"] if command == "run" else []
    done = run_cli(command, "--daemon-url", url, *cmd, env=clean_env(tmp_path))
    refused(
        done,
        f"ssebench {command}: error: argument --daemon-url: {problem}: {EXPECTED_URL} "
        f"(got {url!r})",
    )


@pytest.mark.parametrize(("url", "problem"), BAD_URLS)
@pytest.mark.parametrize("args", [["plugins"], ["serve"], ["grade"], ["mcp-config", "json"]])
def test_a_daemon_url_variable_is_checked_at_start_by_every_command(
    run_cli: Run, tmp_path: Path, args: list[str], url: str, problem: str
) -> None:
    done = run_cli(*args, env=clean_env(tmp_path, SSE_DAEMON_URL=url))
    refused(done, f"ssebench: error: SSE_DAEMON_URL: {problem}: {EXPECTED_URL} (got {url!r})")


def test_a_bad_variable_stops_a_command_even_when_a_flag_overrides_it(
    run_cli: Run, tmp_path: Path
) -> None:
    """The README's rule, with no exception: a bad value stops any command."""
    task = make_task(tmp_path / "task", "bare")
    env = clean_env(tmp_path, SSE_DIFFICULTY="5")
    done = run_cli("check", "--task", str(task), "--difficulty", "1", "--quiet", env=env)
    refused(done, "ssebench: error: SSE_DIFFICULTY must be one of 0, 1, 2, 3, 4 (got '5')")


def test_a_misspelt_flag_is_named_before_a_missing_one(run_cli: Run, tmp_path: Path) -> None:
    done = run_cli("check", "--taks", str(tmp_path), env=clean_env(tmp_path))
    refused(done, "ssebench check: error: unrecognized arguments: --taks (did you mean --task?)")
    done = run_cli("validate", "--tsk=x", "--fx", "y", env=clean_env(tmp_path))
    refused(
        done,
        "ssebench validate: error: unrecognized arguments: --tsk=x (did you mean --task?), "
        "--fx (did you mean --fix?)",
    )
    done = run_cli("check", "--difficulty", "-1", env=clean_env(tmp_path))  # a value, not a flag
    assert done.returncode == 2 and "unrecognized" not in done.stderr


def test_a_bare_ssebench_prints_the_help_on_stdout(run_cli: Run, tmp_path: Path) -> None:
    done = run_cli(env=clean_env(tmp_path))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("usage: ssebench [-h] [--version]")
    assert done.stdout == run_cli("--help", env=clean_env(tmp_path)).stdout


def test_the_daemon_port_in_use_is_named_as_the_flag_that_chose_it(
    run_cli: Run, tmp_path: Path
) -> None:
    task = make_task(tmp_path / "task", "bare")
    with taken_port() as port:
        mcp = free_port()
        done = run_cli("serve", "--task", str(task), "--port", str(mcp), "--daemon-port",
                       str(port), env=clean_env(tmp_path))  # fmt: skip
        refused(
            done,
            f"ssebench: error: cannot listen on 127.0.0.1:{port} (--daemon-port, the embedded "
            "daemon's port): Address already in use",
        )
        done = run_cli("serve", "--task", str(task), "--port", str(port), env=clean_env(tmp_path))
        refused(
            done,
            f"ssebench: error: cannot listen on 127.0.0.1:{port} (--port): Address already in use",
        )
    assert port_is_free(mcp)


def test_the_start_up_line_names_the_daemon_port(serve: Any) -> None:
    server = serve("bare", 3)
    line = (
        f"ssebench: serving test_patch at http://127.0.0.1:{server.port}/mcp (difficulty 3, "
        f"task {server.task / 'task.toml'}, daemon at http://127.0.0.1:{server.daemon_port})"
    )
    wait_for(
        lambda: line in server.stderr().splitlines(),
        10,
        lambda: f"{line!r} in {server.stderr()!r}",
        0.05,
    )


def test_the_daemon_port_help_shows_its_default(run_cli: Run, tmp_path: Path) -> None:
    text = " ".join(run_cli("serve", "--help", env=clean_env(tmp_path)).stdout.split())
    assert "--daemon-port DAEMON_PORT embedded daemon's port on 127.0.0.1 (default 3001)" in text


@pytest.mark.parametrize(
    ("args", "url"),
    [
        ([], "http://localhost:3000/mcp"),
        (["--port", "3142"], "http://localhost:3142/mcp"),
        (["--host", "127.0.0.1", "--port", "8080"], "http://127.0.0.1:8080/mcp"),
        (["--host", "::1"], "http://[::1]:3000/mcp"),
    ],
)
def test_mcp_config_for_another_address(
    run_cli: Run, tmp_path: Path, args: list[str], url: str
) -> None:
    done = run_cli("mcp-config", "claude", *args, env=clean_env(tmp_path))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"claude mcp add ssebench {url} --transport http --scope user\n"
    done = run_cli("mcp-config", "json", "--port", "0", env=clean_env(tmp_path))
    refused(
        done,
        "ssebench mcp-config: error: argument --port: must be a port number from 1 to 65535 "
        "(got '0')",
    )
