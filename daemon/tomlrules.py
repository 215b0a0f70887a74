"""The rules of task.toml's models, in our words: a wrong table is one `Problem` (the keys that
lead to it, and what), never pydantic's own wording. Validators that read the file system get
the task file's path and the installed checks as the validation `Context`."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    PlainValidator,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    WrapValidator,
)

from ssebench.core.check import Check
from ssebench.core.errors import ConfigError, plain_error

Where = tuple[str | int, ...]
UNKNOWN = ("extra_forbidden", "unexpected_keyword_argument")  # of a model, of a dataclass


class Context(TypedDict):
    """What validation knows beside the file: where it is, the installed checks, the image the
    file names (`image`, read before the rest) and whether the task is loaded here to run in
    that image (`for_image`: absolute paths missing here are the image's)."""

    path: Path
    checks: dict[str, Check]
    image: str | None
    for_image: bool


class Problem(ValueError):
    """The one thing wrong with a table: the keys below it that lead there, and what."""

    def __init__(self, where: Where, text: str) -> None:
        super().__init__(text)
        self.where, self.text = where, text


def first_problem(
    exc: ValidationError, unknown: str = "unknown key", by_name: bool = False
) -> Problem:
    """The problem a table reports: an unknown key first (in file order, or `by_name`), else
    the first of its keys' problems, in key order."""
    errors = exc.errors()
    extra = [error for error in errors if error["type"] in UNKNOWN]
    if extra:
        first = min(extra, key=lambda e: str(e["loc"])) if by_name else extra[0]
        return Problem(first["loc"], unknown)
    first = errors[0]
    found = first.get("ctx", {}).get("error")
    if isinstance(found, Problem):
        return Problem((*first["loc"], *found.where), found.text)
    return Problem(first["loc"], plain_error(first))


def must(phrase: str, got: bool = False) -> WrapValidator:
    """Whatever is wrong with the value (its type, an item of it), it reads as `phrase`."""

    def wrap(value: object, handler: Callable[[object], object]) -> object:
        try:
            return handler(value)
        except ValidationError:
            raise Problem((), f"{phrase} (got {value!r})" if got else phrase) from None

    return WrapValidator(wrap)


def table(not_a_table: str, unknown: str, wrong: str) -> WrapValidator:
    """A table within a table: its first problem, named from its own key; any wrong value of
    one of its keys reads as `wrong`."""

    def wrap(value: object, handler: Callable[[object], object]) -> object:
        if not isinstance(value, dict):
            raise Problem((), not_a_table)
        try:
            return handler(value)
        except ValidationError as exc:
            found = first_problem(exc, unknown)
            if found.text == unknown:
                raise found from None
            key = found.where[0]
            raise Problem((key,), f"{wrong} (got {value[key]!r})") from None

    return WrapValidator(wrap)


def then(raw: Any, phrase: str, convert: Callable[[Any, Context], Any]) -> PlainValidator:
    """A key given as `raw` (a wrong value of any kind reads as `phrase`), held as `convert`
    makes it: the file system's checks, the check tables."""
    adapter: TypeAdapter[Any] = TypeAdapter(raw, config=ConfigDict(strict=True))

    def validate(value: object, info: ValidationInfo) -> Any:
        try:
            given = adapter.validate_python(value)
        except ValidationError:
            raise Problem((), phrase) from None
        return convert(given, cast(Context, info.context))

    return PlainValidator(validate, json_schema_input_type=raw)


def fail(text: str) -> ConfigError:
    """taskpaths' `fail`: the problem, at the key being validated."""
    raise Problem((), text)


class Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def seconds(value: object, handler: Callable[[object], object]) -> object:
    """A time limit: a finite number of seconds above 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Problem((), f"must be a number of seconds (got {value!r})")
    if not math.isfinite(value):
        raise Problem((), f"must be a finite number of seconds (got {value!r})")
    if value <= 0:
        raise Problem((), f"must be greater than 0 (got {value!r})")
    return handler(value)


def env_table(value: object, handler: Callable[[object], object]) -> object:
    """`env`: names of variables and their string values, none of them ssebench's own."""
    if not isinstance(value, dict):
        raise Problem((), 'must be a table of NAME = "value"')
    for name, text in value.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or not isinstance(text, str):
            raise Problem((name,), "must be a variable name with a string value")
        if "\0" in text:
            raise Problem((name,), "must not contain a NUL character")
        if name.startswith("SSE_"):
            raise Problem((name,), "SSE_ variables are ssebench's own")
    return handler(value)


def variable_names(value: object, handler: Callable[[object], object]) -> object:
    """`pass_env`: names of the daemon's variables, none of them ssebench's own settings."""
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise Problem((), "must be a list of variable names")
    for name in value:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise Problem((), f"{name!r} is not a variable name")
        if name.startswith("SSE_") or name == "MCP_LOG_DIR":
            raise Problem((), f"{name}: ssebench's own settings never reach a case")
    return handler(value)
