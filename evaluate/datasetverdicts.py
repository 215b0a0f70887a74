"""A dataset's validation (`ssebench validate --tasks`), each shape declared once: what each task's
saved verdict was made from, and the summary; docs/evaluating.md's tables are `field_table`'s."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from ssebench.evaluate.verdicts import Shape, Validation

SOUND, NOT_SOUND, ERROR = "sound", "not sound", "error"


class ValidatedWith(Shape):
    task: str = Field(description="the task id")
    fix_sha256: str = Field(description="the fix's SHA-256")
    task_sha256: str | None = Field(
        description="the task's: its folder and source tree, by content (as `graded_with`)"
    )
    ssebench: str = Field(description="the ssebench version")
    runs: int = Field(description="runs on each tree")
    validator: str | None = Field(
        description="how: confined or not, and in Docker the image's ID (as `grader`)"
    )


class SavedValidation(Validation):
    """`OUT/<task>/validation.json`: the task's `validate --json`, and what it was made from."""

    validated_with: ValidatedWith | None = None


class TaskVerdict(Shape):
    task: str = Field(description="the task id (its folder's name)")
    verdict: str = Field(description="`sound`, `not sound` or `error` (no verdict)")
    reused: bool = Field(description="validated by an earlier run from the same task and fix")
    problems: list[str] = Field(description="what makes it unsound, as `validate` says")
    flaky: list[str] = Field(description="its flaky cases, as `validate` says")
    warnings: list[str] = Field(description="worth a look, not unsound, as `validate` says")
    error: str | None = Field(description="why it has no verdict, one line; else `null`")


class DatasetSummary(Shape):
    """`OUT/summary.json` of `validate --tasks` (printed by `--json`)."""

    total: int = Field(description="tasks in `--tasks` (its folders that hold a task.toml)")
    sound: int = Field(description="sound tasks")
    not_sound: int = Field(description="tasks that are not sound")
    errors: int = Field(description="tasks with no verdict: no fix, a validate that failed")
    sound_ids: list[str] = Field(description="each sound task")
    not_sound_ids: list[str] = Field(description="each task that is not sound")
    error_ids: list[str] = Field(description="each task with no verdict")
    tasks: list[TaskVerdict] = Field(description="every task, by name")


def read_validation(path: Path) -> SavedValidation | None:
    """A task's validation.json, or None when there is none (or not a whole one)."""
    try:
        return SavedValidation.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return None


def dataset_table(summary: DatasetSummary, header: str) -> str:
    """For people: each task's verdict and its first problem (or why it has none)."""
    rows = [("task", "verdict", "why")]
    for task in summary.tasks:
        why = task.error or next(iter([*task.problems, *task.flaky]), "")
        rows.append((task.task, task.verdict.replace("not sound", "NOT sound"), why))
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    lines = [header, ""] + [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c}".rstrip() for a, b, c in rows]
    verdict = "sound" if summary.sound == summary.total else "NOT sound"
    lines += ["", f"The dataset is {verdict}: {summary.sound} of {summary.total} tasks are sound."]
    return "\n".join(lines)
