"""task.toml: what a task's checks run, validated with errors that name the file and the key."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ssebench.core.check import Check
from ssebench.core.errors import ConfigError

DEFAULT_TIMEOUT = 3600.0
_TABLE_KEYS = {"run", "cases", "timeout"}


@dataclass(frozen=True)
class TaskCheck:
    """One check's table: its commands (cases), time limit and the check's own options."""

    check: Check
    cases: tuple[str, ...]
    timeout: float
    options: BaseModel | None


@dataclass(frozen=True)
class Task:
    path: Path  # the task.toml
    source: Path
    checks: dict[str, TaskCheck]

    @property
    def directory(self) -> Path:
        return self.path.parent


def find_task_file(task: Path) -> Path:
    """`--task` may name the folder or the file itself."""
    return task / "task.toml" if task.is_dir() else task


def load_task(task: Path, checks: tuple[Check, ...] | list[Check]) -> Task:
    try:
        path = find_task_file(task).resolve()
    except OSError as exc:  # a name too long for the file system, say
        raise ConfigError(f"--task: {_path_error(task, exc)}") from None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such task file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ConfigError(f"{path}: not valid TOML: arrays or tables nested too deeply") from None

    def fail(key: str, problem: str) -> ConfigError:
        return ConfigError(f"{path}: {key}: {problem}")

    unknown = sorted(set(data) - {"source", "checks"})
    if unknown:
        raise fail(unknown[0], "unknown key")
    raw_source = data.get("source")
    if not isinstance(raw_source, str) or not raw_source:
        raise fail("source", "must be the path of the source tree")
    if "\0" in raw_source:
        raise fail("source", "must not contain a NUL character")
    try:
        source = (path.parent / raw_source).resolve()
        is_dir = source.is_dir()
    except OSError as exc:
        raise fail("source", _path_error(raw_source, exc)) from None
    if not is_dir:
        raise fail("source", f"{source} is not a directory")
    tables = data.get("checks", {})
    if not isinstance(tables, dict):
        raise fail("checks", "must be a table of check tables")
    known = {check.key: check for check in checks}
    loaded: dict[str, TaskCheck] = {}
    for key, table in tables.items():
        check = known.get(key)
        if check is None:
            raise fail(f"checks.{key}", f"unknown check (known: {', '.join(known)})")
        if not isinstance(table, dict):
            raise fail(f"checks.{key}", "must be a table")
        loaded[key] = _load_table(check, table, lambda k, p, key=key: fail(f"checks.{key}.{k}", p))
    return Task(path=path, source=source, checks=loaded)


def _path_error(path: Path | str, exc: OSError) -> str:
    """One short line: a path the file system refuses may be thousands of characters long."""
    text = str(path)
    shown = text if len(text) <= 80 else f"{text[:40]}...({len(text)} characters)"
    return f"{shown}: {exc.strerror or exc}"


def _load_table(check: Check, table: dict[str, Any], fail: Any) -> TaskCheck:
    option_keys = set(check.options.model_fields) if check.options else set()
    for name in table:
        if name not in _TABLE_KEYS | option_keys:
            raise fail(name, "unknown key")
    if ("run" in table) == ("cases" in table):
        raise fail("run", "give exactly one of 'run' (one case) or 'cases' (a list)")
    if "run" in table:
        cases = [table["run"]]
        where = "run"
    else:
        cases = table["cases"]
        where = "cases"
        if not isinstance(cases, list):
            raise fail(where, "must be a list of commands")
    if not all(isinstance(case, str) and case.strip() for case in cases):
        raise fail(where, "every command must be a non-empty string")
    if any("\0" in case for case in cases):
        raise fail(where, "a command must not contain a NUL character (bash cannot run it)")
    timeout = table.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise fail("timeout", f"must be a number of seconds (got {timeout!r})")
    if not math.isfinite(timeout):
        raise fail("timeout", f"must be a finite number of seconds (got {timeout!r})")
    if timeout <= 0:
        raise fail("timeout", f"must be greater than 0 (got {timeout!r})")
    options = None
    if check.options is not None:
        given = {name: table[name] for name in option_keys if name in table}
        try:
            options = check.options.model_validate(given)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            raise fail(where, error["msg"].removeprefix("Value error, ")) from None
    return TaskCheck(check=check, cases=tuple(cases), timeout=float(timeout), options=options)
