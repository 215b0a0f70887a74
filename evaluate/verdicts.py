"""The JSON an evaluator reads, each shape declared once: a grade, a task's validation, a
benchmark run's summary and what a saved verdict was graded with. docs/evaluating.md's tables
of fields are `field_table`'s (a test compares them). A file of it is written whole or not at all,
and a saved verdict read back through its model."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field, StrictBool


class Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CaseVerdict(Shape):
    index: int = Field(description="the case, from 0, in task.toml's order")
    passed: bool = Field(
        description="the check's verdict; for a PoC, that it no longer triggers the bug"
    )
    exit_code: int | None = Field(
        description="`null` when a signal ended it, or when it did not run (the tree over "
        "`limits.tree_mb`: its log says so)"
    )
    signal: int | None = Field(description="the signal that ended it, or `null`")
    timed_out: bool = Field(description="it ran out of its time")
    seconds: float = Field(description="how long it ran")
    sanitizer_exit: int | None = Field(
        None,
        description="the exit status its sanitizers were told to end it with (a report); "
        "`null` when the task sets `exitcode` itself, or it did not run: a rejudge reads it",
    )


class CheckVerdict(Shape):
    key: str = Field(description="the check's table in task.toml")
    name: str = Field(description="its name as the report prints it")
    status: str = Field(
        description="`passed`, `failed` or `not run` (a failed build stops every later check)"
    )
    detail: str | None = Field(
        description="the text the report puts in parentheses (`3 of 3`, `the build failed`, "
        "`the task has none`), or `null`"
    )
    cases: list[CaseVerdict] = Field(
        description="each case that ran (PoCs stop at the first that still triggers)"
    )


class Applied(Shape):
    applied: bool = Field(description="the patch applied to the copy")
    error: str | None = Field(
        description="why not, as one line of git's own words (`patch failed: rle.c:88; rle.c: "
        "patch does not apply`); `null` when it applied"
    )
    dropped: list[str] = Field(
        default_factory=list,
        description="the files of the patch that are build outputs by their bytes (ELF, `ar`, "
        "Python bytecode...), not applied: each as shipped, or absent when new; sorted",
    )


RESOLVED = "every check passed (a check the task lacks passes)"
REASON = (
    "why, in one word: `resolved`, `patch-does-not-apply`, or the failure the headline "
    "reports (the checks' precedence): `build-failed`, `functional-failed`, "
    "`poc-still-triggers`, `intent-failed` (another check's: `<key>-failed`)"
)
CHECKS = "every check the task can have, in run order; empty when the patch did not apply"


class Grade(Shape):
    """`ssebench grade --task` (in place, or a daemon's tree)."""

    resolved: bool = Field(description=RESOLVED)
    reason: str = Field(description=REASON)
    checks: list[CheckVerdict] = Field(description=CHECKS)


class Protected(Shape):
    reverted: list[str] = Field(
        description="the paths put back as shipped before any check ran (changed files "
        "restored, deleted ones brought back, added ones removed), sorted; `[]` when none"
    )


class Signal(Shape):
    kind: str = Field(description="what was found: one of the kinds below")
    path: str = Field(description="the file of the patch it is in")
    line: int | None = Field(
        description="its line in the patched file (in the file as shipped, for a line the "
        "patch removes), or `null` when it is about the whole file"
    )
    detail: str = Field(description="what it is, in one line")


class PatchGrade(Shape):
    """`ssebench grade --task --patch`: whether the patch applied, what the grade put back,
    what a reviewer should look at, then the checks."""

    resolved: bool = Field(description=RESOLVED)
    reason: str = Field(description=REASON)
    patch: Applied = Field(description="whether the patch applied")
    protected: Protected = Field(
        description="what the grade kept as shipped: task.toml's `protected` paths, the build "
        "files they stand for, and the runners' own files, which a patch may not add"
    )
    signals: list[Signal] = Field(
        description="findings for a reviewer, read from the patch, in its order; they never "
        "change `resolved`"
    )
    checks: list[CheckVerdict] = Field(description=CHECKS)


class GradedWith(Shape):
    """What a saved verdict was graded with: reused only when all six are this run's."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = Field(None, description="the prediction's model")
    task: str | None = Field(None, description="the task id")
    patch_sha256: str | None = Field(None, description="the patch's SHA-256")
    task_sha256: str | None = Field(
        None, description="the task's: its folder and source tree, by content"
    )
    ssebench: str | None = Field(None, description="the ssebench version")
    grader: str | None = Field(
        None, description="how it was graded: confined or not, and in Docker the image's ID"
    )


class SavedGrade(Shape):
    """result.json: the grade's JSON as it was printed, and `graded_with`."""

    model_config = ConfigDict(extra="allow")

    resolved: StrictBool
    reason: str | None = None
    patch: Applied | None = None
    checks: list[CheckVerdict] = []
    graded_with: GradedWith | None = None


class Fix(Shape):
    applied: bool = Field(description="the fix applied")
    error: str | None = Field(description="why not, or `null`")


class CaseVerdicts(Shape):
    check: str = Field(description="the check's key")
    name: str = Field(description="the check's name")
    index: int = Field(description="the case, from 0")
    as_shipped: list[bool | None] = Field(
        description="its verdict in each run as shipped (`true` passed, `false` failed, "
        "`null` not run)"
    )
    with_fix: list[bool | None] = Field(description="the same, with the fix")


class Validation(Shape):
    """`ssebench validate --json`."""

    sound: bool = Field(description="no problem and no flaky case")
    runs: int = Field(description="runs on each tree")
    fix: Fix = Field(description="whether the fix applied, as `patch` in a grade")
    problems: list[str] = Field(
        description="what makes the task unsound, one sentence each, naming the case"
    )
    flaky: list[str] = Field(
        description="cases whose verdict differs between runs, with how often they passed"
    )
    warnings: list[str] = Field(
        description="worth a look, not unsound: intent tests that pass as shipped, a task "
        "without PoCs, a `protected` glob that matches nothing, a fix that changes a protected "
        "path, a granted link no case can follow"
    )
    cases: list[CaseVerdicts] = Field(description="every case of every check")


def dump(shape: BaseModel) -> dict[str, Any]:
    """The JSON object of `shape`, its keys in declaration order (extra ones after)."""
    return shape.model_dump(exclude_unset=isinstance(shape, SavedGrade))


def _inner(annotation: Any) -> tuple[type[BaseModel] | None, str]:
    """The model a field holds (itself, in a list or a dict, or None), and how a path goes on
    into it: `[]` into a list, `.<name>` into a dict of them by name (summary's `models`)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, ""
    for arg in get_args(annotation):
        found, step = _inner(arg)
        if found is not None:
            origin = getattr(annotation, "__origin__", None)
            into = "[]" if origin is list else ".<model>" if origin is dict else ""
            return found, step or into
    return None, ""


def field_rows(shape: type[BaseModel], prefix: str = "") -> list[tuple[str, str]]:
    rows = []
    for name, info in shape.model_fields.items():
        inner, step = _inner(info.annotation)
        path = f"{prefix}{name}{step}"
        if info.description:
            rows.append((path, info.description))
        if inner is not None:
            rows += field_rows(inner, f"{path}.")
    return rows


def field_table(shape: type[BaseModel]) -> str:
    """The docs' table of `shape`'s fields: one row for each, nested ones by their path."""
    lines = ["| field | meaning |", "|---|---|"]
    lines += [f"| `{path}` | {meaning} |" for path, meaning in field_rows(shape)]
    return "\n".join(lines)


def write_json(path: Path, data: Any) -> None:
    """Whole or not at all: a reader (or a rerun) never sees half a file."""
    write_whole(path, json.dumps(data, indent=2) + "\n")


def write_whole(path: Path, text: str) -> None:
    """`text` in `path`, whole or not at all, with the mode the umask gives a new file (0644
    under 022), as the logs beside it have: a web server's user serves the run as it is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.parent / f".{path.name}.{secrets.token_hex(6)}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def read_saved(path: Path) -> SavedGrade | None:
    """A finished grade's result.json, or None when there is none (or not a whole one)."""
    try:
        return SavedGrade.model_validate_json(path.read_bytes())
    except (OSError, ValueError):  # pydantic's ValidationError is a ValueError
        return None
