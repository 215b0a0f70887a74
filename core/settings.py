"""Settings read once from the environment; flags override them and they are passed down."""

from __future__ import annotations

import math
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ssebench.core.errors import ConfigError, plain_error
from ssebench.core.levels import LevelError, parse_level

# --daemon-api: "upstream" is the daemon of the public ssebench project's task containers
# (docs/upstream.md), "native" this package's own daemon (`ssebench daemon`, /v1), "auto" probes
# for either. "ssebench" is upstream's old name, still taken (the command line says so).
DAEMON_APIS = ("auto", "upstream", "native", "ssebench")
DAEMON_API_CHOICES = DAEMON_APIS[:3]  # what --help offers
OLD_DAEMON_API = "ssebench"
DAEMON_API_HELP = (
    "the daemon's API: upstream for the daemon of the public ssebench project's task containers "
    "(ssebench, its old name, is still taken), native for `ssebench daemon`; default auto, "
    "whichever answers"
)


# Seconds a call may stay quiet before the server sends a heartbeat: under DESIGN.md's 20 s
# with room for a loaded machine, and far under Claude Code's 300 s.
PROGRESS_INTERVAL = 15.0


SECONDS_ERROR = "must be a positive number of seconds"
URL_EXAMPLE = (
    "expected an http:// or https:// URL such as http://127.0.0.1:3001, or unix:PATH for a "
    "Unix socket"
)


def positive_seconds(raw: str) -> float:
    """A number of seconds as a user writes it; ValueError in our words (the flag and the
    variable say the same)."""
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(SECONDS_ERROR)
    return value


def _url_problem(raw: str) -> str | None:
    if any(char.isspace() or not char.isprintable() for char in raw):
        return "a control character or a space in it"
    if raw.startswith("unix:"):
        return None if raw.startswith("unix:/") else "a socket's path must be absolute"
    try:
        parts = urlsplit(raw)
    except ValueError:  # "Invalid IPv6 URL", the only thing urlsplit refuses here
        return "an unclosed [ in its host"
    if parts.scheme not in ("http", "https"):
        return "no host" if not raw.strip("/:") else "no http:// or https://"
    if not parts.hostname:
        return "no host"
    _, colon, port = parts.netloc.rpartition("]")[2].rpartition(":")
    if colon and not (port.isascii() and port.isdigit()):
        return f"port {port!r} is not a number"
    if colon and not 1 <= int(port) <= 65535:
        return f"port {port} is not from 1 to 65535"
    return None


def daemon_url(raw: str) -> str:
    """`raw` when a daemon can be reached at it; else ValueError saying why, in one line
    (httpx would raise from deep inside a request, with a traceback)."""
    problem = _url_problem(raw)
    if problem is not None:
        raise ValueError(f"{problem}: {URL_EXAMPLE}")
    return raw


class Settings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    difficulty: int = Field(default=2, validation_alias="SSE_DIFFICULTY")
    mcp_timeout: float = Field(default=300.0, validation_alias="SSE_MCP_TIMEOUT")
    log_dir: Path = Field(default=Path("/tmp/mcp/logs"), validation_alias="MCP_LOG_DIR")
    daemon_url: str | None = Field(default=None, validation_alias="SSE_DAEMON_URL")
    progress_interval: float = Field(
        default=PROGRESS_INTERVAL, validation_alias="SSE_PROGRESS_INTERVAL"
    )

    @field_validator("difficulty", mode="before")
    @classmethod
    def _strict_level(cls, value: object) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise ValueError(f"SSE_DIFFICULTY must be one of 0, 1, 2, 3, 4 (got {value!r})")
        return parse_level(value)

    @field_validator("mcp_timeout", "progress_interval", mode="before")
    @classmethod
    def _seconds(cls, value: object) -> float:
        return positive_seconds(str(value))

    @field_validator("daemon_url", mode="before")
    @classmethod
    def _reachable(cls, value: object) -> str | None:
        return None if value is None else daemon_url(str(value))

    @field_validator("log_dir", mode="before")
    @classmethod
    def _log_dir_given(cls, value: object) -> object:
        # Path("") would silently mean the server's working directory.
        if isinstance(value, str) and not value:
            raise ValueError("must not be empty")
        return value

    @field_validator("log_dir")
    @classmethod
    def _log_dir_absolute(cls, value: Path) -> Path:
        # The report prints this path for the agent, whose working directory is not ours.
        return value.absolute()


_ALIASES = {name: str(field.validation_alias) for name, field in Settings.model_fields.items()}


def load_settings(**overrides: object) -> Settings:
    """Read the environment once; a bad value becomes a one-line ConfigError naming the variable."""
    given = {key: value for key, value in overrides.items() if value is not None}
    try:
        return Settings.model_validate(given)
    except LevelError as exc:
        raise ConfigError(str(exc)) from None
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else "setting"
        variable = _ALIASES.get(field, field)
        message = plain_error(error, with_input=False)
        if variable == "SSE_DIFFICULTY":
            raise ConfigError(message) from None
        raise ConfigError(f"{variable}: {message} (got {error.get('input')!r})") from None
