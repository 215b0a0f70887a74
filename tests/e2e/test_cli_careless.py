"""Careless input a new user typed: a flag given twice, a host no URL can hold, a daemon that
is not there for a grade. One line each, with the exit status the README's table gives."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ssebench.testing.servers import clean_env, free_port

from .tasks import make_task
from .test_cli_inputs import refused

pytestmark = pytest.mark.timeout(120)

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["serve", "--port", "3100", "--port", "3200"], "--port"),
        (["check", "--difficulty", "2", "--difficulty", "3"], "--difficulty"),
        (["grade", "-j", "2", "--jobs", "3"], "-j/--jobs"),
    ],
)
def test_a_flag_given_twice_is_one_line(
    run_cli: Run, tmp_path: Path, args: list[str], flag: str
) -> None:
    task = make_task(tmp_path / "task", "bare")
    done = run_cli(*args[:1], "--task", str(task), *args[1:], env=clean_env(tmp_path))
    refused(done, f"ssebench {args[0]}: error: argument {flag}: given more than once; give it once")


@pytest.mark.parametrize("host", ["a b", "a/b", "x:3", "[::1", "[1.2.3.4]", "fe80::1%eth0"])
def test_mcp_config_refuses_a_host_no_url_can_hold(run_cli: Run, tmp_path: Path, host: str) -> None:
    done = run_cli("mcp-config", "claude", "--host", host, env=clean_env(tmp_path))
    refused(
        done,
        "ssebench mcp-config: error: argument --host: must be a host name or an IP address, as "
        f"a URL holds it (got {host!r})",
    )


@pytest.mark.parametrize("host", ["my_box", "grader.example", "10.0.0.7", "[::1]"])
def test_mcp_config_takes_a_container_name_and_addresses(
    run_cli: Run, tmp_path: Path, host: str
) -> None:
    done = run_cli("mcp-config", "claude", "--host", host, env=clean_env(tmp_path))
    url = f"http://{host}:3000/mcp"
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"claude mcp add ssebench {url} --transport http --scope user\n",
        "",
    )


@pytest.mark.parametrize("api", ["auto", "native", "upstream", "ssebench"])
def test_grade_with_a_daemon_that_is_not_there_is_one_line(
    run_cli: Run, tmp_path: Path, api: str
) -> None:
    """One line; `ssebench`, upstream's old name, still works, and a warning says the new one."""
    url = f"http://127.0.0.1:{free_port()}"
    done = run_cli("grade", "--daemon-url", url, "--daemon-api", api, env=clean_env(tmp_path))
    assert (done.returncode, done.stdout) == (3, "")
    old_name = [
        "ssebench: warning: --daemon-api ssebench is the old name of --daemon-api upstream; say "
        "upstream"
    ]
    assert done.stderr.splitlines() == [
        *(old_name if api == "ssebench" else []),
        f"ssebench: error: internal testing failure: no daemon answers at {url} (ConnectError: "
        "All connection attempts failed)",
    ]
