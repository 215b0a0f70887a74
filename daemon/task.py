"""task.toml: what a task's checks run and may read, validated once into the `Task` itself, a
bad file one line naming file and key."""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, PrivateAttr, ValidationError, WrapValidator, model_validator
from pydantic_core import PydanticCustomError

from ssebench.core.check import Check
from ssebench.core.errors import ConfigError
from ssebench.daemon.checktable import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from ssebench.daemon.checktable import Files, Paths, TaskCheck, as_limits, task_checks
from ssebench.daemon.confine.policy import Limits
from ssebench.daemon.protect import globs
from ssebench.daemon.taskenv import chosen, expand_folders, named_folders, variable_entry
from ssebench.daemon.taskpaths import (
    covered,
    missing,
    named_paths,
    path_error,
    readable_paths,
    resolve,
    writable_paths,
)
from ssebench.daemon.tomlrules import (
    Context,
    Table,
    at,
    env_table,
    must,
    one_line,
    problem,
    then,
    variable_names,
)

# A Docker image reference: never empty, never read as a flag of `docker run` (no leading -).
IMAGE = r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$"


def _source(raw: str, context: Context) -> Path:
    path = context["path"]
    source, exists = resolve(path.parent, raw)
    why = None if exists else missing(raw, source, context)
    if why is not None and context["image"] is not None and raw.startswith("/"):
        raise problem(why.replace("no such file or folder", "no such folder"))
    if why is not None or (exists and not source.is_dir()):
        raise problem(f"{source} is not a directory")
    if path.parent == source or source in path.parents:
        # The agent edits the source tree: it would hold the task's withheld files too.
        raise problem(f"{source} holds the task folder; the task must lie outside it")
    return source


class Task(Table):
    """A task.toml, validated: what its checks run and may read. Task files (`files`) are kept
    as their paths name them, symbolic links unresolved: cases name them by those paths, and a
    link inside a declared folder is part of it (a venv's bin/python). Where the file is
    (`path`) is no key of it: the validation context gives it."""

    by_name = True
    source: Annotated[
        Path,
        then(Annotated[str, Field(min_length=1)], "must be the path of the source tree", _source),
    ] = Field(
        None,
        validate_default=True,
        description="the tree the agent edits; relative paths are from this file's folder",
    )
    checks: Annotated[
        dict[str, TaskCheck],
        then(dict[str, object], "must be a table of check tables", task_checks),
    ] = Field(default_factory=dict, description="`[checks.<key>]`: the checks the task has")
    files: Files = ()  # task files every case may read
    network: bool = Field(False, description="cases may use the network (and sockets) of the host")
    image: (
        Annotated[
            str,
            Field(pattern=IMAGE),
            must('must be a Docker image name, e.g. "debian:12"', got=True),
        ]
        | None
    ) = Field(None, description="the task's environment under `grade --backend docker`")
    env: Annotated[dict[str, str], WrapValidator(env_table)] = Field(
        default_factory=dict,
        description="added to every case's environment; $SSE_TASK_DIR and $SSE_SOURCE_DIR expand",
    )
    default_env: Annotated[dict[str, str], WrapValidator(env_table)] = Field(
        default_factory=dict,
        description="an image's environment: the daemon's own value of each name wins",
    )
    readable: Annotated[
        tuple[Path, ...], then(Paths, "must be a list of absolute paths", readable_paths)
    ] = Field((), description="system paths a toolchain needs, or $NAME: the folder it names")
    writable: Annotated[
        tuple[Path, ...], then(Paths, "must be a list of absolute paths of folders", writable_paths)
    ] = Field((), description="folders outside the tree that cases may write (in-image builds)")
    pass_env: Annotated[
        tuple[str, ...], then(list[str], "must be a list of variable names", variable_names)
    ] = Field((), description="names of the daemon's environment a case may see (default: none)")
    protected: Annotated[
        tuple[str, ...],
        then(Paths, "must be a list of paths of the source tree", lambda r, _: globs(r, problem)),
    ] = Field((), description="tree paths a graded patch cannot change (gitignore-style globs)")
    limits: Annotated[
        Limits,
        then(dict[str, object], "must be a table, e.g. { processes = 4096, memory_mb = 16384 }",
             as_limits),
    ] = Field(default_factory=Limits, description="what one case may use")  # fmt: skip
    _path: Path = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._path = context["path"]  # what validation knows that the file does not say

    @model_validator(mode="after")
    def _reads_what_it_names(self) -> Task:
        """Every task path a command names, as `$SSE_TASK_DIR/<path>` or by the task folder's
        own path, must be a file its cases may read: a PoC that cannot open its input would
        otherwise pass as "no longer triggers". A path in `env` must be in some check's files
        at least."""
        folder, source = self.directory, self.source
        for key, table in self.checks.items():
            for index, command in enumerate(table.cases):
                for shown, named in named_paths(folder, source, command):
                    if not covered(named, (*self.files, *table.files)):
                        raise at(("checks", key), f"case {index} names {shown}, which is in "
                                 "neither this check's files nor the top-level files")  # fmt: skip
        every = (*self.files, *(path for table in self.checks.values() for path in table.files))
        for name, value in self.env.items():
            for shown, named in named_paths(folder, source, value, by_path=False):
                if not covered(named, every):
                    raise at(("env", name), f"names {shown}, which is in neither a check's "
                             "files nor the top-level files")  # fmt: skip
        return self

    @model_validator(mode="after")
    def _defaults_apply(self) -> Task:
        """A default of a name `env` sets would never be taken: say so, rather than have the
        task's author wonder why the user's value is not."""
        for name in self.default_env:
            if name in self.env:
                raise at(("default_env", name), "env sets it too, and env always wins")
        return self

    @model_validator(mode="after")
    def _readable_variables(self) -> Task:
        """Each `readable` entry `$NAME` becomes the folders NAME names in the cases'
        environment on this machine (`env`, else the daemon's, else `default_env`)."""
        if not any(str(path).startswith("$") for path in self.readable):
            return self
        values = {**self.passed_env(os.environ), **self.env}
        known = {*self.env, *self.default_env, *self.pass_env}
        found: list[Path] = []
        for path in self.readable:
            name = variable_entry(str(path))
            if name is None:
                found.append(path)
            elif name not in known:
                why = "names no variable of the cases' environment (env, default_env, pass_env)"
                raise at(("readable",), f"${name}: {why}")
            else:
                try:
                    found += named_folders(name, values.get(name, ""), self.directory)
                except PydanticCustomError as exc:
                    raise at(("readable",), exc.message()) from None
        object.__setattr__(self, "readable", tuple(dict.fromkeys(found)))  # frozen: made here
        return self

    @model_validator(mode="after")
    def _writes_beside_the_tree(self) -> Task:
        """A writable folder is neither the source tree, in it, nor above it: the tree is the
        runner copy's, which the cases write already."""
        for folder in self.writable:
            real = Path(os.path.realpath(folder))
            if real == self.source or self.source in real.parents or real in self.source.parents:
                raise at(("writable",), f"{folder}: is the source tree, in it or above it")
        return self

    @property
    def path(self) -> Path:
        """The task.toml."""
        return self._path

    @property
    def directory(self) -> Path:
        return self.path.parent

    def case_env(self, tree: str) -> dict[str, str]:
        """`env` as cases get it: $SSE_TASK_DIR and $SSE_SOURCE_DIR expanded to the task
        folder and to `tree`, where the case sees the tree (its runner copy), so a path beside
        the tree reaches the case wherever the tree is."""
        return expand_folders(self.env, self._folders(tree))

    def passed_env(self, environ: Mapping[str, str], tree: str = "") -> dict[str, str]:
        """What cases get of `environ` (the daemon's): the `pass_env` names it has, and each
        `default_env` name as it has it, else the task's default (expanded as `env` is)."""
        defaults = expand_folders(self.default_env, self._folders(tree))
        return chosen(environ, self.pass_env, defaults)

    def _folders(self, tree: str) -> dict[str, str]:
        return {"SSE_TASK_DIR": str(self.directory), "SSE_SOURCE_DIR": tree}

    def commands(self) -> tuple[str, ...]:
        """Every case's command, of every check."""
        return tuple(command for table in self.checks.values() for command in table.cases)

    def named_files(self, command: str) -> tuple[str, ...]:
        """The task files `command` names that exist, where they lead: its case's user must
        read each of them."""
        named = named_paths(self.directory, self.source, command)
        return tuple(os.path.realpath(path) for _, path in named if _there(path))

    def bounded(self, tree_mb: int) -> Task:
        """This task with `tree_mb` as its `limits.tree_mb` (the `--tree-mb` flag)."""
        limits = dataclasses.replace(self.limits, tree_mb=tree_mb)
        bounded = self.model_copy(update={"limits": limits})
        return bounded

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
        moved = self.model_copy(update={"checks": checks, "files": tuple(map(move, self.files))})
        moved._path = move(self.path)
        return moved

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
        return Task.model_validate(raw, context=context)
    except ValidationError as exc:
        raise one_line(path, exc) from None
