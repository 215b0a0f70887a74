"""What every importer shares: reading a source strictly (one line naming the file and the key),
and what a reader hands the command (evaluate/importers/writer.py writes it).

A reader (`Reader`, one per format in the table of evaluate/importers/__init__.py) turns a
`Request` into `Records`: `Imported` tasks (a task folder's id, task.toml's text and its files),
one at a time, each bad record in their stream as the `SourceError` that refuses it, so an
import of thousands can go on past one (`--keep-going`) or stop there.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ssebench.core.errors import ConfigError, plain_error
from ssebench.evaluate.digests import ssebench_version

# A Docker repository's path component: what a task id becomes in an image name.
IMAGE_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
PLAIN_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._+-]{0,126}[A-Za-z0-9])?")
# What an imported task keeps of its own beside the benchmark's files.
OWN_NAMES = ("task.toml", "fix.patch")
# A case's environment is an allow-list: these variables of the image's (OSS-Fuzz's base images
# set them for `compile`, toolchain images for go and cargo) reach its builds, nothing else.
BUILD_ENV = (
    *("SRC", "OUT", "WORK", "CC", "CXX", "CCC", "CFLAGS", "CXXFLAGS", "LDFLAGS"),
    *("LIB_FUZZING_ENGINE", "SANITIZER", "SANITIZER_FLAGS", "FUZZING_ENGINE"),
    *("FUZZING_LANGUAGE", "ARCHITECTURE", "MSAN_LIBS_PATH"),
    *("GOPATH", "GOROOT", "GOFLAGS", "GOTOOLCHAIN", "CGO_ENABLED"),
    *("CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "RUSTFLAGS"),
)


class SourceError(ConfigError):
    """A source an importer cannot take: `where` (the file, and the line of a JSON-lines
    file), the key, and what is wrong, as one line."""

    def __init__(self, where: str, key: str, problem: str) -> None:
        super().__init__(f"{where}: {key}: {problem}" if key else f"{where}: {problem}")


class Strict(BaseModel):
    """A source's record: unknown keys refused, no value coerced (`"1"` is not 1)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def first_problem(exc: ValidationError) -> tuple[str, str]:
    """The key and the problem a record reports: an unknown or missing key first."""
    errors = exc.errors()
    keyed = [e for e in errors if e["type"] in ("extra_forbidden", "missing")] or errors
    error = keyed[0]
    key = ".".join(str(part) for part in error["loc"])
    if error["type"] == "string_too_short":
        return key, "must not be empty"
    if error["type"] == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        return key, f"must be one of {expected} (got {error.get('input')!r})"
    return key, plain_error(error)


def validated(model: type[Strict], data: object, where: str) -> Any:
    """`data` as `model`, or one line naming `where` and the key."""
    if not isinstance(data, dict):
        raise SourceError(where, "", f"must be a mapping of keys (got {type(data).__name__})")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise SourceError(where, *first_problem(exc)) from None


def plain_name(value: str, where: str, key: str, pattern: re.Pattern[str] = PLAIN_NAME) -> str:
    """A task id as a folder's (and an image's) name: refused, in one line, when it is not."""
    if not pattern.fullmatch(value) or ".." in value:
        raise SourceError(where, key, f"not a plain name (got {value!r})")
    return value


def image_path(value: str, where: str, key: str) -> str:
    """An absolute, normalized path in an image (a source tree, say), never `/` itself."""
    if not value.startswith("/") or value == "/" or os.path.normpath(value) != value:
        why = f"must be an absolute path such as /src/project (got {value!r})"
        raise SourceError(where, key, why)
    return value


@dataclass
class Imported:
    """One task folder to write: its id (the folder's name), task.toml's text, and its files
    (a path in the folder: the bytes, and whether the file is a script run directly)."""

    id: str
    toml: str
    files: dict[str, tuple[bytes, bool]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # said once each, the task written

    def add(self, path: str, data: bytes, *, script: bool = False) -> None:
        self.files[path] = (data, script)


@dataclass(frozen=True)
class Request:
    """What `import` was asked: SOURCE (absolute) and the flags a format may take (the table
    in evaluate/importers/__init__.py says which are whose)."""

    path: Path
    source: Path | None = None
    image: str | None = None
    mode: str | None = None


@dataclass
class Records:
    """A source's records, read one at a time as they are asked for: each a task, or the
    `SourceError` that refuses it; `total`, how many, when known before they are read; `notes`,
    what the import says once, whatever it holds."""

    items: Iterator[Imported | SourceError]
    total: int | None = None
    notes: tuple[str, ...] = ()


Reader = Callable[[Request], Records]


def provenance(command: str, where: str, what: str, beside: str) -> str:
    """task.toml's first lines: where the task came from, and its source's metadata beside."""
    return (
        f"# Imported by `ssebench import {command}` (ssebench {ssebench_version()}) from\n"
        f"# {where}: {what}.\n"
        f"# The source's own metadata is beside this file: {beside}.\n"
    )


def metadata_json(record: object) -> bytes:
    """A source's own record, kept beside task.toml as it was read."""
    return (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode()
