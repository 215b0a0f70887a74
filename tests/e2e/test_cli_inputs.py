"""Bad input on the command line, as a new user types it: one line on stderr, exit status 2,
never a traceback, and nothing announced or left listening. Plus `--version` and a bare
`ssebench`."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import pytest

from ssebench.testing.servers import clean_env, free_port, port_is_free, taken_port

from .tasks import make_task

pytestmark = pytest.mark.timeout(120)

Run = Callable[..., subprocess.CompletedProcess[str]]


def refused(done: subprocess.CompletedProcess[str], line: str) -> None:
    assert (done.returncode, done.stderr.splitlines(), done.stdout) == (2, [line], "")


def test_version_prints_the_package_version(run_cli: Run, tmp_path: Path) -> None:
    done = run_cli("--version", env=clean_env(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"ssebench {version('ssebench')}\n",
        "",
    )


def test_a_bare_ssebench_prints_the_usage_and_the_commands(run_cli: Run, tmp_path: Path) -> None:
    done = run_cli(env=clean_env(tmp_path))
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("usage: ssebench [-h] [--version]")
    for command in ("check", "grade", "plugins", "daemon", "serve", "run", "mcp-config"):
        assert f"\n    {command} " in done.stdout


@pytest.mark.parametrize(
    ("command", "flag", "value"),
    [
        ("serve", "--port", "99999"),
        ("serve", "--daemon-port", "0"),
        ("daemon", "--port", "99999"),
        ("run", "--port", "-1"),
        ("serve", "--port", "３０００"),  # fullwidth digits: int() would take them
    ],
)
def test_a_port_out_of_range(
    run_cli: Run, tmp_path: Path, command: str, flag: str, value: str
) -> None:
    task = make_task(tmp_path / "task", "bare")
    cmd = ["--", "true"] if command == "run" else []
    done = run_cli(command, "--task", str(task), flag, value, *cmd, env=clean_env(tmp_path))
    refused(
        done,
        f"ssebench {command}: error: argument {flag}: must be a port number from 1 to 65535 "
        f"(got {value!r})",
    )


@pytest.mark.parametrize("command", ["serve", "run"])
def test_one_port_for_mcp_and_the_daemon(run_cli: Run, tmp_path: Path, command: str) -> None:
    task = make_task(tmp_path / "task", "bare")
    port = str(free_port())
    args = [command, "--task", str(task), "--port", port, "--daemon-port", port]
    done = run_cli(*args, *(["--", "true"] if command == "run" else []), env=clean_env(tmp_path))
    refused(
        done,
        f"ssebench: error: --port and --daemon-port are both {port}; the embedded daemon needs "
        "its own",
    )
    assert port_is_free(int(port))


TOML_ERRORS = {
    "a NUL in source": ('source = "src\\u0000x"\n', "source: must not contain a NUL character"),
    "a NUL in run": (
        'source = "src"\n[checks.build]\nrun = "make\\u0000"\n',
        "checks.build.run: a command must not contain a NUL character (bash cannot run it)",
    ),
    "a NUL in cases": (
        'source = "src"\n[checks.pocs]\ncases = ["ok", "\\u0000"]\n',
        "checks.pocs.cases: a command must not contain a NUL character (bash cannot run it)",
    ),
    "an array nested 5,000 deep": (
        'source = "src"\nx = ' + "[" * 5000 + "]" * 5000 + "\n",
        "not valid TOML: arrays or tables nested too deeply",
    ),
}


@pytest.mark.parametrize("command", ["check", "daemon", "serve", "grade"])
@pytest.mark.parametrize("case", sorted(TOML_ERRORS))
def test_a_task_toml_the_runner_cannot_take(
    run_cli: Run, tmp_path: Path, command: str, case: str
) -> None:
    text, problem = TOML_ERRORS[case]
    (tmp_path / "task" / "src").mkdir(parents=True)
    path = tmp_path / "task" / "task.toml"
    path.write_text(text)
    done = run_cli(command, "--task", str(path.parent), env=clean_env(tmp_path))
    refused(done, f"ssebench: error: {path}: {problem}")


@pytest.mark.parametrize("command", ["check", "daemon", "serve", "grade"])
def test_a_5000_character_path(run_cli: Run, tmp_path: Path, command: str) -> None:
    long = str(tmp_path / ("a" * 5000))
    done = run_cli(command, "--task", long, env=clean_env(tmp_path))
    refused(
        done,
        f"ssebench: error: --task: {long[:40]}...({len(long)} characters): File name too long",
    )


def test_a_5000_character_source(run_cli: Run, tmp_path: Path) -> None:
    (tmp_path / "task").mkdir()
    path = tmp_path / "task" / "task.toml"
    path.write_text(f'source = "{"b" * 5000}"\n')
    done = run_cli("check", "--task", str(path), env=clean_env(tmp_path))
    refused(
        done,
        f"ssebench: error: {path}: source: {'b' * 40}...(5000 characters): File name too long",
    )


# Each command with arguments that parse (README: "Every command checks every setting").
EVERY_COMMAND = {
    "check": ["--task", "."],
    "grade": [],
    "validate": ["--task", "."],
    "plugins": [],
    "import": ["upstream", ".", "--out", "{tmp}/out"],
    "new": ["{tmp}/new-task"],
    "daemon": ["--task", "."],
    "serve": [],
    "run": ["true"],
    "mcp-config": ["codex"],
}


def test_the_list_holds_every_command() -> None:
    from ssebench.core.cli.parser import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert sorted(EVERY_COMMAND) == sorted(commands)


@pytest.mark.parametrize("args", [[name, *rest] for name, rest in EVERY_COMMAND.items()])
def test_every_command_refuses_a_bad_setting(run_cli: Run, tmp_path: Path, args: list[str]) -> None:
    args = [arg.format(tmp=tmp_path) for arg in args]
    done = run_cli(*args, env=clean_env(tmp_path, SSE_DIFFICULTY="02"))
    refused(done, "ssebench: error: SSE_DIFFICULTY must be one of 0, 1, 2, 3, 4 (got '02')")
    done = run_cli(*args, env=clean_env(tmp_path, SSE_PROGRESS_INTERVAL="nan"))
    refused(
        done,
        "ssebench: error: SSE_PROGRESS_INTERVAL: must be a positive number of seconds (got 'nan')",
    )
    assert not (tmp_path / "out").exists() and not (tmp_path / "new-task").exists()


@pytest.mark.parametrize("args", [["--version"], ["--help"], [], ["check", "--help"]])
def test_only_printing_what_ssebench_is_checks_no_setting(
    run_cli: Run, tmp_path: Path, args: list[str]
) -> None:
    done = run_cli(*args, env=clean_env(tmp_path, SSE_DIFFICULTY="02"))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == run_cli(*args, env=clean_env(tmp_path)).stdout != ""


@pytest.mark.parametrize("value", ["0", "-5", "inf", "nan", "soon"])
def test_a_bad_progress_interval(run_cli: Run, tmp_path: Path, value: str) -> None:
    task = make_task(tmp_path / "task", "bare")
    done = run_cli(
        "serve", "--task", str(task), "--progress-interval", value, env=clean_env(tmp_path)
    )
    refused(
        done,
        "ssebench serve: error: argument --progress-interval: must be a positive number of "
        f"seconds (got {value!r})",
    )


def test_the_daemon_on_a_busy_port_says_one_line_and_nothing_else(
    run_cli: Run, tmp_path: Path
) -> None:
    task = make_task(tmp_path / "task", "bare")
    with taken_port() as port:
        done = run_cli("daemon", "--task", str(task), "--port", str(port), env=clean_env(tmp_path))
    refused(
        done, f"ssebench: error: cannot listen on 127.0.0.1:{port} (--port): Address already in use"
    )


def test_the_daemon_needs_allow_remote_for_another_address(run_cli: Run, tmp_path: Path) -> None:
    task = make_task(tmp_path / "task", "bare")
    port = free_port()
    done = run_cli(
        "daemon", "--task", str(task), "--host", "0.0.0.0", "--port", str(port),
        env=clean_env(tmp_path),
    )  # fmt: skip
    refused(
        done,
        "ssebench: error: --host 0.0.0.0 is not a loopback address; pass --allow-remote to be "
        "reachable from other machines",
    )
    assert port_is_free(port)
