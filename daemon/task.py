"""task.toml: what a task's checks run and may read, validated with errors naming file and key."""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ssebench.core.check import Check
from ssebench.core.errors import ConfigError

DEFAULT_TIMEOUT = 3600.0
_TOP_KEYS = {"source", "checks", "files", "env", "network", "image"}
_TABLE_KEYS = {"run", "cases", "timeout", "files"}
# A Docker image reference: never empty, never read as a flag of `docker run` (no leading -).
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]*")
# $SSE_TASK_DIR/<path> or ${SSE_TASK_DIR}/<path>, the path up to what ends a shell word.
_TASK_PATH = re.compile(r"\$(?:SSE_TASK_DIR\b|\{SSE_TASK_DIR\})/([^\s'\"`;|&<>()$\\]*)")

Fail = Callable[[str, str], ConfigError]


@dataclass(frozen=True)
class TaskCheck:
    """One check's table: its commands (cases), time limit, files and the check's own options."""

    check: Check
    cases: tuple[str, ...]
    timeout: float
    options: BaseModel | None
    files: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Task:
    path: Path  # the task.toml
    source: Path
    checks: dict[str, TaskCheck]
    files: tuple[Path, ...] = ()  # task files every case may read
    env: dict[str, str] = field(default_factory=dict)  # added to every case's environment
    network: bool = False  # cases may reach the host network (TCP)
    image: str | None = None  # the task's environment under `grade --backend docker`

    @property
    def directory(self) -> Path:
        return self.path.parent

    def readable(self, enabled: Iterable[Check]) -> tuple[Path, ...]:
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


def _path_error(path: Path | str, exc: OSError) -> str:
    """One short line: a path the file system refuses may be thousands of characters long."""
    text = str(path)
    shown = text if len(text) <= 80 else f"{text[:40]}...({len(text)} characters)"
    return f"{shown}: {exc.strerror or exc}"


def _resolve(folder: Path, raw: str, fail: Callable[[str], ConfigError]) -> tuple[Path, bool]:
    """`raw` from `folder`, resolved, and whether it exists; one line when the system refuses."""
    if "\0" in raw:
        raise fail("must not contain a NUL character")
    try:
        resolved = (folder / raw).resolve()
        return resolved, resolved.exists()
    except OSError as exc:  # a name too long for the file system, say
        raise fail(_path_error(raw, exc)) from None


def load_task(task: Path, checks: tuple[Check, ...] | list[Check]) -> Task:
    try:
        path = find_task_file(task).resolve()
    except OSError as exc:
        raise ConfigError(f"--task: {_path_error(task, exc)}") from None
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
    files = _files(data.get("files", []), path, lambda p: fail("files", p))
    network = data.get("network", False)
    if not isinstance(network, bool):
        raise fail("network", f"must be true or false (got {network!r})")
    image = data.get("image")
    if image is not None and not (isinstance(image, str) and _IMAGE.fullmatch(image)):
        raise fail("image", f'must be a Docker image name, e.g. "debian:12" (got {image!r})')
    env = _env(data.get("env", {}), fail)
    loaded_task = Task(path, source, loaded, files, env, network, image=image)
    _check_references(loaded_task, fail)
    return loaded_task


def _within(fail: Fail, prefix: str) -> Fail:
    """`fail` for the keys of one table."""
    return lambda key, problem: fail(f"{prefix}.{key}", problem)


def _source(path: Path, raw: object, fail: Fail) -> Path:
    if not isinstance(raw, str) or not raw:
        raise fail("source", "must be the path of the source tree")
    source, _ = _resolve(path.parent, raw, lambda problem: fail("source", problem))
    if not source.is_dir():
        raise fail("source", f"{source} is not a directory")
    if path.parent == source or source in path.parents:
        # The agent edits the source tree: it would hold the task's withheld files too.
        raise fail("source", f"{source} holds the task folder; the task must lie outside it")
    return source


def _files(raw: object, path: Path, fail: Callable[[str], ConfigError]) -> tuple[Path, ...]:
    """Task files (or folders) relative to the folder of task.toml (`path`), or absolute; each
    must exist, and neither task.toml nor the task folder itself may be given away."""
    if not isinstance(raw, list) or not all(isinstance(item, str) and item for item in raw):
        raise fail("must be a list of paths (relative to the task folder, or absolute)")
    found = []
    for item in raw:
        resolved, exists = _resolve(path.parent, item, fail)
        if resolved == path or resolved == path.parent or resolved in path.parents:
            raise fail(f"{item}: the task folder and task.toml are never readable by a case")
        if not exists:
            raise fail(f"{item}: no such file or folder ({resolved})")
        found.append(resolved)
    return tuple(found)


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


def _check_references(task: Task, fail: Fail) -> None:
    """Every task path a command names, as `$SSE_TASK_DIR/<path>` or by the task folder's own
    path, must be a file its cases may read: a PoC that cannot open its input would otherwise
    pass as "no longer triggers"."""
    by_path = re.compile(re.escape(str(task.directory)) + r"/([^\s'\"`;|&<>()$\\]*)")
    for key, table in task.checks.items():
        allowed = (*task.files, *table.files)
        for index, command in enumerate(table.cases):
            for pattern, shown in ((_TASK_PATH, "$SSE_TASK_DIR"), (by_path, str(task.directory))):
                for match in pattern.finditer(command):
                    named = (task.directory / match.group(1)).resolve()
                    if task.source == named or task.source in named.parents:
                        continue  # the source tree is the cases' own
                    if not any(named == root or root in named.parents for root in allowed):
                        raise fail(
                            f"checks.{key}",
                            f"case {index + 1} names {shown}/{match.group(1)}, which is in "
                            "neither this check's files nor the top-level files",
                        )


def _load_table(check: Check, table: dict[str, Any], path: Path, fail: Fail) -> TaskCheck:
    option_keys = set(check.options.model_fields) if check.options else set()
    for name in table:
        if name not in _TABLE_KEYS | option_keys:
            raise fail(name, "unknown key")
    cases = _cases(table, fail)
    timeout = table.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise fail("timeout", f"must be a number of seconds (got {timeout!r})")
    if not math.isfinite(timeout):
        raise fail("timeout", f"must be a finite number of seconds (got {timeout!r})")
    if timeout <= 0:
        raise fail("timeout", f"must be greater than 0 (got {timeout!r})")
    files = _files(table.get("files", []), path, lambda p: fail("files", p))
    options = None
    if check.options is not None:
        given = {name: table[name] for name in option_keys if name in table}
        try:
            options = check.options.model_validate(given)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            raise fail(where, error["msg"].removeprefix("Value error, ")) from None
    return TaskCheck(check, tuple(cases), float(timeout), options, files)


def _cases(table: dict[str, Any], fail: Fail) -> list[str]:
    if ("run" in table) == ("cases" in table):
        raise fail("run", "give exactly one of 'run' (one case) or 'cases' (a list)")
    where = "run" if "run" in table else "cases"
    cases = [table["run"]] if where == "run" else table["cases"]
    if not isinstance(cases, list):
        raise fail(where, "must be a list of commands")
    if not all(isinstance(case, str) and case.strip() for case in cases):
        raise fail(where, "every command must be a non-empty string")
    if any("\0" in case for case in cases):
        raise fail(where, "a command must not contain a NUL character (bash cannot run it)")
    return cases
