"""task.toml: what a task's checks run and may read, validated with errors naming file and key."""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ssebench.core.check import Check
from ssebench.core.errors import ConfigError
from ssebench.daemon.confine.policy import Limits
from ssebench.daemon.taskfile import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from ssebench.daemon.taskfile import TaskCheck, TaskFile
from ssebench.daemon.taskpaths import Fail, check_references, named_task_paths, path_error
from ssebench.daemon.tomlrules import Context, first_problem

# What expands in `env` values: these two, as $NAME or ${NAME}; nothing else (no shell runs).
_FOLDER = re.compile(r"\$(?:(SSE_TASK_DIR|SSE_SOURCE_DIR)\b|\{(SSE_TASK_DIR|SSE_SOURCE_DIR)\})")


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
    pass_env: tuple[str, ...] = ()  # names of the daemon's environment a case may see
    protected: tuple[str, ...] = ()  # tree paths (gitignore globs) a grade puts back as shipped
    writable: tuple[Path, ...] = ()  # folders outside the tree cases may write (/out)

    @property
    def directory(self) -> Path:
        return self.path.parent

    def case_env(self, tree: str) -> dict[str, str]:
        """`env` as cases get it: $SSE_TASK_DIR and $SSE_SOURCE_DIR expanded to the task
        folder and to `tree`, where the case sees the tree (its runner copy), so a path beside
        the tree reaches the case wherever the tree is."""
        folders = {"SSE_TASK_DIR": str(self.directory), "SSE_SOURCE_DIR": tree}
        return {
            name: _FOLDER.sub(lambda found: folders[found[1] or found[2]], value)
            for name, value in self.env.items()
        }

    def named_files(self, command: str) -> tuple[str, ...]:
        """The task files `command` names that exist, where they lead: its case's user must
        read each of them."""
        return tuple(
            os.path.realpath(path) for path in named_task_paths(self, command) if _there(path)
        )

    def moved(self, directory: Path) -> Task:
        """This task read from a copy of its folder at `directory`: every path in the folder
        (task.toml, task files) moved there; the source tree and paths outside stay."""

        def move(path: Path) -> Path:
            inside = path.is_relative_to(self.directory)
            return directory / path.relative_to(self.directory) if inside else path

        checks = {
            key: dataclasses.replace(table, files=tuple(map(move, table.files)))
            for key, table in self.checks.items()
        }
        return dataclasses.replace(
            self, path=move(self.path), checks=checks, files=tuple(map(move, self.files))
        )

    def granted(self, enabled: Iterable[Check]) -> tuple[Path, ...]:
        """The task files cases may read while these checks are enabled."""
        keys = {check.key for check in enabled}
        own = (path for key, table in self.checks.items() if key in keys for path in table.files)
        return tuple(dict.fromkeys([*self.files, *own]))


def _there(path: Path) -> bool:
    """Whether `path` may exist: a file we cannot even look at counts (its case then says
    whether it can read it)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


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


def load_task(
    task: Path, checks: tuple[Check, ...] | list[Check], *, for_image: bool = False
) -> Task:
    """The task at `task`; `for_image`: loaded here to be run in its image (`--backend
    docker`), so an absolute path that is not on this machine is taken as the image's."""
    try:
        path = find_task_file(task).resolve()
    except OSError as exc:
        raise ConfigError(f"--task: {path_error(task, exc)}") from None
    raw = _read(path)
    image = raw.get("image") if isinstance(raw.get("image"), str) else None
    context = Context(path=path, checks={c.key: c for c in checks}, image=image,
                      for_image=for_image)  # fmt: skip
    try:
        found = TaskFile.model_validate(raw, context=context)
    except ValidationError as exc:
        problem = first_problem(exc, by_name=True)
        raise _fail(path)(".".join(map(str, problem.where)), problem.text) from None
    loaded = Task(
        path,
        found.source,
        found.checks,
        found.files,
        found.env,
        found.network,
        found.readable,
        found.limits.limits(),
        found.image,
        tuple(found.pass_env),
        found.protected,
        found.writable,
    )
    check_references(loaded, _fail(path))
    _check_writable(loaded, _fail(path))
    return loaded


def _check_writable(task: Task, fail: Fail) -> None:
    """A writable folder is neither the source tree, in it, nor above it: the tree is the
    runner copy's, which the cases write already."""
    source = task.source
    for folder in task.writable:
        real = Path(os.path.realpath(folder))
        if real == source or source in real.parents or real in source.parents:
            raise fail("writable", f"{folder}: is the source tree, in it or above it")


def _fail(path: Path) -> Fail:
    return lambda key, problem: ConfigError(f"{path}: {key}: {problem}")
