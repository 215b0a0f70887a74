"""Settings from the environment: SSE_DIFFICULTY, SSE_MCP_TIMEOUT, MCP_LOG_DIR."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssebench.core.errors import ConfigError
from ssebench.core.settings import load_settings

VARIABLES = (
    "SSE_DIFFICULTY",
    "SSE_MCP_TIMEOUT",
    "MCP_LOG_DIR",
    "SSE_DAEMON_URL",
    "SSE_PROGRESS_INTERVAL",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def one_line_error() -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_defaults() -> None:
    settings = load_settings()
    assert settings.difficulty == 2
    assert settings.mcp_timeout == 300
    assert settings.log_dir == Path("/tmp/mcp/logs")
    assert settings.daemon_url is None


# --- SSE_DIFFICULTY --------------------------------------------------------------------------


@pytest.mark.parametrize("level", range(5))
def test_difficulty_from_the_environment(monkeypatch: pytest.MonkeyPatch, level: int) -> None:
    monkeypatch.setenv("SSE_DIFFICULTY", str(level))
    assert load_settings().difficulty == level


@pytest.mark.parametrize("raw", ["5", "-1", "02", " 2", "2.0", "two", "", "2 ", "4\n", "1e0"])
def test_bad_difficulty_is_a_one_line_config_error(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("SSE_DIFFICULTY", raw)
    message = one_line_error()
    assert message == f"SSE_DIFFICULTY must be one of 0, 1, 2, 3, 4 (got {raw!r})"


def test_difficulty_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSE_DIFFICULTY", "1")
    settings = load_settings()
    monkeypatch.setenv("SSE_DIFFICULTY", "3")
    assert settings.difficulty == 1


def test_a_flag_overrides_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSE_DIFFICULTY", "1")
    assert load_settings(SSE_DIFFICULTY="3").difficulty == 3
    assert load_settings(SSE_DIFFICULTY=None).difficulty == 1  # an absent flag does not


def test_a_bad_flag_value_is_refused_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSE_DIFFICULTY", "1")
    with pytest.raises(ConfigError, match=r"^SSE_DIFFICULTY must be one of .*\(got '9'\)$"):
        load_settings(SSE_DIFFICULTY="9")


def test_a_bad_difficulty_is_refused_even_with_a_valid_flag_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SSE_DIFFICULTY", "two")
    monkeypatch.setenv("SSE_MCP_TIMEOUT", "5")
    assert "'two'" in one_line_error()


# --- SSE_MCP_TIMEOUT --------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "seconds"), [("5", 5.0), ("0.5", 0.5), ("600", 600.0)])
def test_mcp_timeout(monkeypatch: pytest.MonkeyPatch, raw: str, seconds: float) -> None:
    monkeypatch.setenv("SSE_MCP_TIMEOUT", raw)
    assert load_settings().mcp_timeout == seconds


@pytest.mark.parametrize("raw", ["0", "-1", "abc", "", "inf", "nan"])
def test_bad_mcp_timeout_is_a_one_line_config_error(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("SSE_MCP_TIMEOUT", raw)
    message = one_line_error()
    assert message.startswith("SSE_MCP_TIMEOUT: ")
    assert message.endswith(f"(got {raw!r})")


# --- MCP_LOG_DIR ------------------------------------------------------------------------------


def test_log_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MCP_LOG_DIR", str(tmp_path / "logs"))
    assert load_settings().log_dir == tmp_path / "logs"


def test_relative_log_dir_is_made_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The report prints this path for the agent to read, from wherever the agent runs.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MCP_LOG_DIR", "logs")
    settings = load_settings()
    assert settings.log_dir == tmp_path / "logs"
    assert settings.log_dir.is_absolute()


def test_empty_log_dir_is_a_one_line_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_LOG_DIR", "")
    message = one_line_error()
    assert message.startswith("MCP_LOG_DIR: ")
    assert message.endswith("(got '')")


# --- our words, never pydantic's ---------------------------------------------------------------


@pytest.mark.parametrize("variable", ["SSE_MCP_TIMEOUT", "SSE_PROGRESS_INTERVAL"])
@pytest.mark.parametrize("raw", ["0", "-1", "abc", "", "inf", "nan", "1e400"])
def test_seconds_are_refused_in_our_words(
    monkeypatch: pytest.MonkeyPatch, variable: str, raw: str
) -> None:
    monkeypatch.setenv(variable, raw)
    assert one_line_error() == f"{variable}: must be a positive number of seconds (got {raw!r})"


# --- SSE_DAEMON_URL ---------------------------------------------------------------------------

EXPECTED_URL = (
    "expected an http:// or https:// URL such as http://127.0.0.1:3001, or unix:PATH for a "
    "Unix socket"
)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("http://[::1", "an unclosed [ in its host"),
        ("http://127.0.0.1:99999", "port 99999 is not from 1 to 65535"),
        ("http://127.0.0.1:0", "port 0 is not from 1 to 65535"),
        ("http://127.0.0.1:port", "port 'port' is not a number"),
        ("http://127.0.0.1:3001\x01", "a control character or a space in it"),
        ("http://127.0.0.1 :3001", "a control character or a space in it"),
        ("127.0.0.1:3001", "no http:// or https://"),
        ("ftp://127.0.0.1:3001", "no http:// or https://"),
        ("http://", "no host"),
        ("", "no host"),
        ("unix:run/admin.sock", "a socket's path must be absolute"),
        ("unix:/run/a b.sock", "a control character or a space in it"),
    ],
)
def test_a_daemon_url_that_cannot_be_reached_is_one_line(
    monkeypatch: pytest.MonkeyPatch, raw: str, problem: str
) -> None:
    monkeypatch.setenv("SSE_DAEMON_URL", raw)
    assert one_line_error() == f"SSE_DAEMON_URL: {problem}: {EXPECTED_URL} (got {raw!r})"


@pytest.mark.parametrize(
    "raw",
    ["http://127.0.0.1:3001", "https://daemon.example/", "http://[::1]:3001", "http://x",
     "unix:/archive/admin.sock"],
)  # fmt: skip
def test_good_daemon_urls(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("SSE_DAEMON_URL", raw)
    assert load_settings().daemon_url == raw
