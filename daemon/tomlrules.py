"""The rules of task.toml's models: each wrong value is one pydantic error in our words, and a
bad file is one line, its table's first problem (an unknown key of a table before anything else
in it). Validators that read the file system get the task file's path and the installed checks
as the validation `Context`."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypedDict, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    PlainValidator,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    WrapValidator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from ssebench.core.check import Check
from ssebench.core.errors import ConfigError, plain_error

Where = tuple[str | int, ...]
OURS = "task_toml"  # the error type of every message a rule of ours writes


class Context(TypedDict):
    """What validation knows beside the file: where it is, the installed checks, the image the
    file names (`image`, read before the rest) and whether the task is loaded here to run in
    that image (`for_image`: absolute paths missing here are the image's)."""

    path: Path
    checks: dict[str, Check]
    image: str | None
    for_image: bool


def problem(text: str) -> PydanticCustomError:
    """What is wrong with the value being validated, as written (pydantic fills in only the
    `{names}` of a context, and we give none)."""
    return PydanticCustomError(OURS, text)


def at(where: Where, text: str) -> ValidationError:
    """A problem at keys below the value being validated (`env.NAME`, `cases.0`): pydantic puts
    the keys it walked itself in front of them."""
    return ValidationError.from_exception_data(
        OURS, [InitErrorDetails(type=problem(text), loc=where, input=None)]
    )


def below(where: Where, exc: ValidationError) -> ValidationError:
    """A table's one problem under the keys a validator walked by hand (a check's key, a case's
    index), which pydantic cannot put in front of it."""
    error = exc.errors()[0]
    return at((*where, *error["loc"]), error["msg"])


class Table(BaseModel):
    """A table of task.toml: unknown keys refused, values as TOML gives them, and one problem
    reported, its first (what `unknown` and `by_name` say of its unknown keys)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    unknown: ClassVar[str] = "unknown key"
    by_name: ClassVar[bool] = False  # the first unknown key by name, not in file order

    @model_validator(mode="wrap")
    @classmethod
    def _one_problem(cls, data: object, handler: Callable[[object], Table]) -> Table:
        try:
            return handler(data)
        except ValidationError as exc:
            raise first_of(exc, cls.unknown, by_name=cls.by_name) from None


def first_of(exc: ValidationError, unknown: str, *, by_name: bool = False) -> ValidationError:
    """The problem a table reports: an unknown key first (in file order, or `by_name`), else the
    first of its keys' problems, in key order, in our words."""
    errors = exc.errors()
    extra = [error for error in errors if error["type"] == "extra_forbidden"]
    if extra:
        found = min(extra, key=lambda e: str(e["loc"])) if by_name else extra[0]
        return at(found["loc"], unknown)
    return at(errors[0]["loc"], plain_error(errors[0]))


def one_line(path: Path, exc: ValidationError) -> ConfigError:
    """A bad task file as the user reads it: the file, the keys to the problem, the problem."""
    error = exc.errors()[0]
    return ConfigError(f"{path}: {'.'.join(map(str, error['loc']))}: {error['msg']}")


def must(phrase: str, got: bool = False) -> WrapValidator:
    """Whatever is wrong with the value (its type, an item of it), it reads as `phrase`."""

    def wrap(value: object, handler: Callable[[object], object]) -> object:
        try:
            return handler(value)
        except ValidationError:
            raise problem(f"{phrase} (got {value!r})" if got else phrase) from None

    return WrapValidator(wrap)


def then(raw: Any, phrase: str, convert: Callable[[Any, Context], Any]) -> PlainValidator:
    """A key given as `raw` (a wrong value of any kind reads as `phrase`), held as `convert`
    makes it: the file system's checks, the check tables."""
    adapter: TypeAdapter[Any] = TypeAdapter(raw, config=ConfigDict(strict=True))

    def validate(value: object, info: ValidationInfo) -> Any:
        try:
            given = adapter.validate_python(value)
        except ValidationError:
            raise problem(phrase) from None
        return convert(given, cast(Context, info.context))

    return PlainValidator(validate, json_schema_input_type=raw)


def seconds(value: object, handler: Callable[[object], object]) -> object:
    """A time limit: a finite number of seconds above 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise problem(f"must be a number of seconds (got {value!r})")
    if not math.isfinite(value):
        raise problem(f"must be a finite number of seconds (got {value!r})")
    if value <= 0:
        raise problem(f"must be greater than 0 (got {value!r})")
    return handler(value)


def env_table(value: object, handler: Callable[[object], object]) -> object:
    """`env`: names of variables and their string values, none of them ssebench's own."""
    if not isinstance(value, dict):
        raise problem('must be a table of NAME = "value"')
    for name, text in value.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or not isinstance(text, str):
            raise at((name,), "must be a variable name with a string value")
        if "\0" in text:
            raise at((name,), "must not contain a NUL character")
        if name.startswith("SSE_"):
            raise at((name,), "SSE_ variables are ssebench's own")
    return handler(value)


def variable_names(raw: list[str], context: Context) -> tuple[str, ...]:
    """`pass_env`: names of the daemon's variables, none of them ssebench's own settings."""
    for name in raw:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise problem(f"{name!r} is not a variable name")
        if name.startswith("SSE_") or name == "MCP_LOG_DIR":
            raise problem(f"{name}: ssebench's own settings never reach a case")
    return tuple(raw)
