"""Settings read once from the environment; flags override them and they are passed down."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ssebench.core.errors import ConfigError
from ssebench.core.levels import LevelError, parse_level

# --daemon-api: "ssebench" is the public ssebench project's daemon API (its task containers),
# "upstream" another name for it; "native" is this package's own daemon (`ssebench daemon`,
# /v1); "auto" probes for either.
DAEMON_APIS = ("auto", "ssebench", "upstream", "native")
DAEMON_API_HELP = (
    "the daemon's API: ssebench (alias upstream) for the daemon of ssebench task containers, "
    "native for `ssebench daemon`; default auto, whichever answers"
)


# Seconds a call may stay quiet before the server sends a heartbeat: under DESIGN.md's 20 s
# with room for a loaded machine, and far under Claude Code's 300 s.
PROGRESS_INTERVAL = 15.0


class Settings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    difficulty: int = Field(default=2, validation_alias="SSE_DIFFICULTY")
    mcp_timeout: float = Field(
        default=300.0, gt=0, allow_inf_nan=False, validation_alias="SSE_MCP_TIMEOUT"
    )
    log_dir: Path = Field(default=Path("/tmp/mcp/logs"), validation_alias="MCP_LOG_DIR")
    daemon_url: str | None = Field(default=None, validation_alias="SSE_DAEMON_URL")
    progress_interval: float = Field(
        default=PROGRESS_INTERVAL,
        gt=0,
        allow_inf_nan=False,
        validation_alias="SSE_PROGRESS_INTERVAL",
    )

    @field_validator("difficulty", mode="before")
    @classmethod
    def _strict_level(cls, value: object) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise ValueError(f"SSE_DIFFICULTY must be one of 0, 1, 2, 3, 4 (got {value!r})")
        return parse_level(value)

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
        message = error["msg"].removeprefix("Value error, ")
        if variable == "SSE_DIFFICULTY":
            raise ConfigError(message) from None
        raise ConfigError(f"{variable}: {message} (got {error.get('input')!r})") from None
