"""task.toml: what a task's checks run and may read, validated with errors naming file and key."""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ssebench.core.check import Check
from ssebench.core.errors import ConfigError, plain_error
from ssebench.daemon.credentials import Limits
from ssebench.daemon.taskpaths import (
    Fail,
    check_references,
    path_error,
    readable_paths,
    resolve,
    task_files,
)

DEFAULT_TIMEOUT = 3600.0
_TOP_KEYS = {"source", "checks", "files", "env", "network", "readable", "limits", "image"}
_TABLE_KEYS = {"run", "cases", "timeout", "files"}
# What expands in `env` values: these two, as $NAME or ${NAME}; nothing else (no shell runs).
_FOLDER = re.compile(r"\$(?:(SSE_TASK_DIR|SSE_SOURCE_DIR)\b|\{(SSE_TASK_DIR|SSE_SOURCE_DIR)\})")
# A Docker image reference: never empty, never read as a flag of `docker run` (no leading -).
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]*")


@dataclass(frozen=True)
class TaskCheck:
    """One check's table: its commands (cases), time limit, files and the check's own options
    (the table's, and those of each case given as a table of its own)."""

    check: Check
    cases: tuple[str, ...]
    timeout: float
    options: BaseModel | None
    files: tuple[Path, ...] = ()
    case_options: tuple[BaseModel | None, ...] = ()

    def options_of(self, index: int) -> BaseModel | None:
        """What case `index` is judged with: its own options where it has any, else the table's."""
        return self.case_options[index] if self.case_options else self.options


@dataclass(frozen=True)
class Task:
    """A loaded task.toml. Task files (`files`) are kept as their paths name them, symbolic
    links unresolved: cases name them by those paths, and a link inside a declared folder is
    part of it (a venv's bin/python)."""

    path: Path  # the task.toml
    source: Path
    checks: dict[str, TaskCheck]
    files: tuple[Path, ...] = ()  # task files every case may read
    env: dict[str, str] = field(default_factory=dict)  # added to every case's environment
    network: bool = False  # cases may reach the host network (TCP)
    readable: tuple[Path, ...] = ()  # system paths beyond the usual ones a toolchain needs
    limits: Limits = field(default_factory=Limits)
    image: str | None = None  # the task's environment under `grade --backend docker`

    @property
    def directory(self) -> Path:
        return self.path.parent

    def case_env(self) -> dict[str, str]:
        """`env` as cases get it: $SSE_TASK_DIR and $SSE_SOURCE_DIR expanded to this task's
        folders (on a grading copy, the copy's source), so a path beside the tree reaches
        the case wherever the tree is graded."""
        folders = {"SSE_TASK_DIR": str(self.directory), "SSE_SOURCE_DIR": str(self.source)}
        return {
            name: _FOLDER.sub(lambda found: folders[found[1] or found[2]], value)
            for name, value in self.env.items()
        }

    def granted(self, enabled: Iterable[Check]) -> tuple[Path, ...]:
        """The task files cases may read while these checks are enabled."""
        keys = {check.key for check in enabled}
        own = (path for key, table in self.checks.items() if key in keys for path in table.files)
        return tuple(dict.fromkeys([*self.files, *own]))


def find_task_file(task: Path) -> Path:
    """`--task` may name the folder or the file itself."""
    return task / "task.toml" if task.is_dir() else task


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such task file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ConfigError(f"{path}: not valid TOML: arrays or tables nested too deeply") from None


def load_task(task: Path, checks: tuple[Check, ...] | list[Check]) -> Task:
    try:
        path = find_task_file(task).resolve()
    except OSError as exc:
        raise ConfigError(f"--task: {path_error(task, exc)}") from None
    data = _read(path)

    def fail(key: str, problem: str) -> ConfigError:
        return ConfigError(f"{path}: {key}: {problem}")

    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise fail(unknown[0], "unknown key")
    source = _source(path, data.get("source"), fail)
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
        loaded[key] = _load_table(check, table, path, _within(fail, f"checks.{key}"))
    files = task_files(data.get("files", []), path, lambda p: fail("files", p))
    network = data.get("network", False)
    if not isinstance(network, bool):
        raise fail("network", f"must be true or false (got {network!r})")
    image = data.get("image")
    if image is not None and not (isinstance(image, str) and _IMAGE.fullmatch(image)):
        raise fail("image", f'must be a Docker image name, e.g. "debian:12" (got {image!r})')
    loaded_task = Task(
        path,
        source,
        loaded,
        files,
        _env(data.get("env", {}), fail),
        network,
        readable_paths(data.get("readable", []), path, fail),
        _limits(data.get("limits", {}), fail),
        image,
    )
    check_references(loaded_task, fail)
    return loaded_task


def _within(fail: Fail, prefix: str) -> Fail:
    """`fail` for the keys of one table."""
    return lambda key, problem: fail(f"{prefix}.{key}", problem)


def _source(path: Path, raw: object, fail: Fail) -> Path:
    if not isinstance(raw, str) or not raw:
        raise fail("source", "must be the path of the source tree")
    source, _ = resolve(path.parent, raw, lambda problem: fail("source", problem))
    if not source.is_dir():
        raise fail("source", f"{source} is not a directory")
    if path.parent == source or source in path.parents:
        # The agent edits the source tree: it would hold the task's withheld files too.
        raise fail("source", f"{source} holds the task folder; the task must lie outside it")
    return source


def _limits(raw: object, fail: Fail) -> Limits:
    if not isinstance(raw, dict):
        raise fail("limits", "must be a table, e.g. { processes = 4096, memory_mb = 16384 }")
    known = Limits.__dataclass_fields__
    for name, value in raw.items():
        if name not in known:
            raise fail(f"limits.{name}", f"unknown limit (known: {', '.join(known)})")
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise fail(f"limits.{name}", f"must be a whole number above 0 (got {value!r})")
    return Limits(**raw)


def _env(raw: object, fail: Fail) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise fail("env", 'must be a table of NAME = "value"')
    for name, value in raw.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or not isinstance(value, str):
            raise fail(f"env.{name}", "must be a variable name with a string value")
        if "\0" in value:
            raise fail(f"env.{name}", "must not contain a NUL character")
        if name.startswith("SSE_"):
            raise fail(f"env.{name}", "SSE_ variables are ssebench's own")
    return dict(raw)


def _load_table(check: Check, table: dict[str, Any], path: Path, fail: Fail) -> TaskCheck:
    option_keys = set(check.options.model_fields) if check.options else set()
    for name in table:
        if name not in _TABLE_KEYS | option_keys:
            raise fail(name, "unknown key")
    cases = _cases(table, option_keys, fail)
    timeout = table.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise fail("timeout", f"must be a number of seconds (got {timeout!r})")
    if not math.isfinite(timeout):
        raise fail("timeout", f"must be a finite number of seconds (got {timeout!r})")
    if timeout <= 0:
        raise fail("timeout", f"must be greater than 0 (got {timeout!r})")
    files = task_files(table.get("files", []), path, lambda p: fail("files", p))
    given = {name: table[name] for name in option_keys if name in table}
    options = _options(check, given, fail)
    each = tuple(
        _options(check, {**given, **own}, _within(fail, f"cases.{index}")) if own else options
        for index, (_, own) in enumerate(cases)
    )
    commands = tuple(command for command, _ in cases)
    return TaskCheck(check, commands, float(timeout), options, files, each)


def _options(check: Check, given: dict[str, Any], fail: Fail) -> BaseModel | None:
    """The check's own keys as its model; a bad value is one line naming the key."""
    if check.options is None:
        return None
    try:
        return check.options.model_validate(given)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise fail(where, plain_error(error)) from None


def _cases(
    table: dict[str, Any], option_keys: set[str], fail: Fail
) -> list[tuple[str, dict[str, Any]]]:
    """Each case's command and its own option keys: a case in `cases` may be a table,
    `{ run = "...", <the check's keys> }`, whose keys replace the check table's for it."""
    if ("run" in table) == ("cases" in table):
        raise fail("run", "give exactly one of 'run' (one case) or 'cases' (a list)")
    where = "run" if "run" in table else "cases"
    raw = [table["run"]] if where == "run" else table["cases"]
    if not isinstance(raw, list):
        raise fail(where, "must be a list of commands")
    cases = [_case(case, index, option_keys, fail) if where == "cases" else (case, {})
             for index, case in enumerate(raw)]  # fmt: skip
    if not all(isinstance(command, str) and command.strip() for command, _ in cases):
        raise fail(where, "every command must be a non-empty string")
    if any("\0" in command for command, _ in cases):
        raise fail(where, "a command must not contain a NUL character (bash cannot run it)")
    return cases


def _case(
    case: object, index: int, option_keys: set[str], fail: Fail
) -> tuple[Any, dict[str, Any]]:
    if not isinstance(case, dict):
        return case, {}
    for name in sorted(set(case) - {"run"}):
        if name not in option_keys:
            raise fail(f"cases.{index}.{name}", "unknown key")
    if "run" not in case:
        raise fail(f"cases.{index}", "a case given as a table needs `run`")
    return case["run"], {name: value for name, value in case.items() if name != "run"}
