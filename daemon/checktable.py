"""task.toml's tables below the top: a check's (its cases, time limit, files and the check's own
options), a case's, and `limits`; each key declared once, with what a wrong value reads as."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, Field, ValidationError, WrapValidator, create_model, model_validator

from ssebench.core.check import Check
from ssebench.core.errors import plain_error
from ssebench.daemon.confine.policy import Limits
from ssebench.daemon.taskpaths import task_files
from ssebench.daemon.tomlrules import (
    Context,
    Table,
    Where,
    at,
    below,
    must,
    problem,
    seconds,
    then,
)

DEFAULT_TIMEOUT = 3600.0


@dataclasses.dataclass(frozen=True)
class TaskCheck:
    """One check's table as the daemon runs it: its commands (cases), time limit, files and the
    check's own options (the table's, and those of each case given as a table of its own). The
    table mixes our keys with the check's and a case may be a table: this is what they mean,
    made once while the table is validated."""

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
    then(Paths, "must be a list of paths (relative to the task folder, or absolute)", task_files),
    Field(description="task files (or folders), relative to the task folder or absolute"),
]


class CaseTable(Table):
    """A case given as a table: `{ run = "...", <the check's keys> }`; its keys replace the
    check table's for this case."""

    by_name = True
    run: object = Field(None, description="the case's command")

    @model_validator(mode="after")
    def _has_run(self) -> CaseTable:
        if self.run is None:
            raise problem("a case given as a table needs `run`")
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
            raise at(("run",), "give exactly one of 'run' (one case) or 'cases' (a list)")
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
            raise at((where,), "every command must be a non-empty string")
        if any("\0" in command for command, _ in cases):
            raise at((where,), "a command must not contain a NUL character (bash cannot run it)")
        return cases

    def _case(self, index: int, case: object) -> tuple[Any, dict[str, Any]]:
        if not isinstance(case, dict):
            return case, {}
        try:
            own = self.case_table.model_validate(case)
        except ValidationError as exc:
            raise below(("cases", index), exc) from None
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
        return TaskCheck(
            check=check,
            cases=tuple(command for command, _ in cases),
            timeout=float(self.timeout),
            options=options,
            files=self.files,
            case_options=each,
        )


def _options(check: Check, given: dict[str, Any], where: Where) -> BaseModel | None:
    """The check's own keys as its model; a bad value is its first problem, as pydantic finds
    them (the check's model is the check's own: an unknown key is not put first)."""
    if check.options is None:
        return None
    try:
        return check.options.model_validate(given)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise at((*where, *error["loc"]), plain_error(error)) from None


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


def task_checks(raw: dict[str, object], context: Context) -> dict[str, TaskCheck]:
    """`[checks.<key>]`, in file order, each as its check runs it; the first bad one is the
    problem."""
    known = context["checks"]
    loaded = {}
    for key, value in raw.items():
        check = known.get(key)
        if check is None:
            raise at((key,), f"unknown check (known: {', '.join(known)})")
        if not isinstance(value, dict):
            raise at((key,), "must be a table")
        try:
            table = for_check(check.options).model_validate(value, context=context)
            loaded[key] = table.task_check(check)
        except ValidationError as exc:
            raise below((key,), exc) from None
    return loaded


Count = Annotated[int, Field(gt=0), must("must be a whole number above 0", got=True)]


class LimitsTable(Table):
    """`limits`: what one case may use (the supervisor's `Limits`, which stays free of pydantic:
    it is imported by the case supervisor, whose every fork copies what it loaded)."""

    unknown = f"unknown limit (known: {', '.join(f.name for f in dataclasses.fields(Limits))})"
    processes: Count = Field(default=Limits.processes, description="processes at once")
    memory_mb: Count = Field(default=Limits.memory_mb, description="MB of memory, all processes")
    open_files: Count = Field(default=Limits.open_files, description="open files per process")
    disk_mb: Count = Field(
        default=Limits.disk_mb,
        description="MB of disk the case's user may hold: the runner copy, TMPDIR, HOME, /tmp",
    )
    tree_mb: Count = Field(
        default=Limits.tree_mb,
        description="MB the agent's tree may hold (its files' sizes) for the daemon to copy it",
    )


def as_limits(raw: dict[str, object], context: Context) -> Limits:
    """`limits` as the supervisor takes them."""
    return Limits(**LimitsTable.model_validate(raw).model_dump())
