"""task.toml's keys as pydantic models: each key declared once, with what a wrong value reads as.

A bad file is one problem, the first in file order (an unknown key of a table before anything
else in it), in our words (daemon/tomlrules.py). The file system's checks (paths exist, lie
outside the task folder) are taskpaths' functions, called from validators in key order; they
get the task file's path as the validation context.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    Field,
    ValidationError,
    WrapValidator,
    create_model,
    model_validator,
)

from ssebench.core.check import Check
from ssebench.core.errors import plain_error
from ssebench.daemon.confine.policy import Limits
from ssebench.daemon.protect import globs
from ssebench.daemon.taskpaths import missing, readable_paths, resolve, task_files, writable_paths
from ssebench.daemon.tomlrules import (
    Context,
    Problem,
    Table,
    Where,
    env_table,
    fail,
    first_problem,
    must,
    seconds,
    table,
    then,
    variable_names,
)

DEFAULT_TIMEOUT = 3600.0


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


Paths = list[Annotated[str, Field(min_length=1)]]
Files = Annotated[
    tuple[Path, ...],
    then(
        Paths,
        "must be a list of paths (relative to the task folder, or absolute)",
        lambda raw, context: task_files(raw, context, fail),
    ),
    Field(description="task files (or folders), relative to the task folder or absolute"),
]


class CaseTable(Table):
    """A case given as a table: `{ run = "...", <the check's keys> }`; its keys replace the
    check table's for this case."""

    run: object = Field(None, description="the case's command")

    @model_validator(mode="after")
    def _has_run(self) -> CaseTable:
        if self.run is None:
            raise Problem((), "a case given as a table needs `run`")
        return self


class CheckTable(Table):
    """`[checks.<key>]`: the check's cases, their time limit and files, and the keys of the
    check's own options (fields of a subclass made for each check, `for_check`)."""

    case_table: ClassVar[type[CaseTable]] = CaseTable
    run: object = Field(None, description="one case: its command (bash -c, cwd = source)")
    cases: Annotated[list[object] | None, must("must be a list of commands")] = Field(
        None, description="several cases, run in order: commands, or tables with `run`"
    )
    timeout: Annotated[float, WrapValidator(seconds)] = Field(
        DEFAULT_TIMEOUT, description="seconds each case may take"
    )
    files: Files = ()

    @model_validator(mode="after")
    def _one_way(self) -> CheckTable:
        if (self.run is None) == (self.cases is None):
            raise Problem(("run",), "give exactly one of 'run' (one case) or 'cases' (a list)")
        return self

    def commands(self) -> list[tuple[str, dict[str, Any]]]:
        """Each case's command and its own option keys."""
        where = "run" if self.cases is None else "cases"
        cases = (
            [(self.run, {})]
            if self.cases is None
            else [self._case(i, c) for i, c in enumerate(self.cases)]
        )
        if not all(isinstance(command, str) and command.strip() for command, _ in cases):
            raise Problem((where,), "every command must be a non-empty string")
        if any("\0" in command for command, _ in cases):
            raise Problem(
                (where,), "a command must not contain a NUL character (bash cannot run it)"
            )
        return cases

    def _case(self, index: int, case: object) -> tuple[Any, dict[str, Any]]:
        if not isinstance(case, dict):
            return case, {}
        try:
            own = self.case_table.model_validate(case)
        except ValidationError as exc:
            found = first_problem(exc, by_name=True)
            raise Problem(("cases", index, *found.where), found.text) from None
        return own.run, own.model_dump(exclude={"run"}, exclude_unset=True)

    def task_check(self, check: Check) -> TaskCheck:
        """The table as the daemon runs it, the check's own keys judged by its model."""
        cases = self.commands()
        given = self.model_dump(exclude=set(CheckTable.model_fields), exclude_unset=True)
        options = _options(check, given, ())
        each = tuple(
            _options(check, {**given, **own}, ("cases", index)) if own else options
            for index, (_, own) in enumerate(cases)
        )
        commands = tuple(command for command, _ in cases)
        return TaskCheck(check, commands, float(self.timeout), options, self.files, each)


def _options(check: Check, given: dict[str, Any], where: Where) -> BaseModel | None:
    """The check's own keys as its model; a bad value is its first problem, as pydantic finds
    them (the check's model is the check's own: an unknown key is not put first)."""
    if check.options is None:
        return None
    try:
        return check.options.model_validate(given)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise Problem((*where, *error["loc"]), plain_error(error)) from None


@functools.cache
def for_check(options: type[BaseModel] | None) -> type[CheckTable]:
    """The table of a check with these options: its keys are allowed, as they are (the check's
    model judges them, a case's merged with its table's)."""
    if options is None:
        return CheckTable
    own: dict[str, Any] = {name: (object, None) for name in options.model_fields}
    checked = create_model("CheckTable", __base__=CheckTable, **own)
    checked.case_table = create_model("CaseTable", __base__=CaseTable, **own)
    return checked


# A Docker image reference: never empty, never read as a flag of `docker run` (no leading -).
IMAGE = r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$"


def _source(raw: str, context: Context) -> Path:
    path = context["path"]
    source, exists = resolve(path.parent, raw, fail)
    why = None if exists else missing(raw, source, context)
    if why is not None and context["image"] is not None and raw.startswith("/"):
        raise Problem((), why.replace("no such file or folder", "no such folder"))
    if why is not None or (exists and not source.is_dir()):
        raise Problem((), f"{source} is not a directory")
    if path.parent == source or source in path.parents:
        # The agent edits the source tree: it would hold the task's withheld files too.
        raise Problem((), f"{source} holds the task folder; the task must lie outside it")
    return source


def _readable(raw: list[str], context: Context) -> tuple[Path, ...]:
    return readable_paths(raw, context, lambda key, text: fail(text))


def _writable(raw: list[str], context: Context) -> tuple[Path, ...]:
    return writable_paths(raw, context, lambda key, text: fail(text))


def _checks(raw: dict[str, object], context: Context) -> dict[str, TaskCheck]:
    known = context["checks"]
    loaded = {}
    for key, value in raw.items():
        check = known.get(key)
        if check is None:
            raise Problem((key,), f"unknown check (known: {', '.join(known)})")
        if not isinstance(value, dict):
            raise Problem((key,), "must be a table")
        try:
            table = for_check(check.options).model_validate(value, context=context)
            loaded[key] = table.task_check(check)
        except ValidationError as exc:
            found = first_problem(exc)
            raise Problem((key, *found.where), found.text) from None
        except Problem as found:
            raise Problem((key, *found.where), found.text) from None
    return loaded


Count = Annotated[int, Field(gt=0)]


class LimitsTable(Table):
    """`limits`: what one case may use (the supervisor's `Limits`, which stays free of pydantic:
    it is imported by the case supervisor, whose every fork copies what it loaded)."""

    processes: Count = Field(default=Limits.processes, description="processes at once")
    memory_mb: Count = Field(default=Limits.memory_mb, description="MB of memory, all processes")
    open_files: Count = Field(default=Limits.open_files, description="open files per process")
    disk_mb: Count = Field(
        default=Limits.disk_mb,
        description="MB of disk the case's user may hold: the runner copy, TMPDIR, HOME, /tmp",
    )

    def limits(self) -> Limits:
        return Limits(**self.model_dump())


class TaskFile(Table):
    """task.toml: what a task's checks run and may read."""

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
        then(dict[str, object], "must be a table of check tables", _checks),
    ] = Field(default_factory=dict, description="`[checks.<key>]`: the checks the task has")
    files: Files = ()
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
    readable: Annotated[
        tuple[Path, ...], then(Paths, "must be a list of absolute paths", _readable)
    ] = Field((), description="system paths outside the usual ones a toolchain needs")
    writable: Annotated[
        tuple[Path, ...], then(Paths, "must be a list of absolute paths of folders", _writable)
    ] = Field((), description="folders outside the tree that cases may write (in-image builds)")
    pass_env: Annotated[list[str], WrapValidator(variable_names)] = Field(
        default_factory=list,
        description="names of the daemon's environment a case may see (default: none)",
    )
    protected: Annotated[
        tuple[str, ...],
        then(Paths, "must be a list of paths of the source tree", lambda r, _: globs(r, fail)),
    ] = Field((), description="tree paths a graded patch cannot change (gitignore-style globs)")
    limits: Annotated[
        LimitsTable,
        table(
            "must be a table, e.g. { processes = 4096, memory_mb = 16384 }",
            f"unknown limit (known: {', '.join(LimitsTable.model_fields)})",
            "must be a whole number above 0",
        ),
    ] = Field(LimitsTable(), description="what one case may use")
