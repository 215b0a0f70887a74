"""One prediction of a benchmark run, as a line (or a list's element) gives it: a prediction to
grade, or one clear error.

A line gives `task`, `patch` and optionally `model` (SWE-bench's `instance_id`, `model_patch`
and `model_name_or_path` are read too; a line that gives both names of one field, differently,
is refused: which one was meant?), `trial` (its number among its model's predictions of the
task) and what the agent's run recorded (evaluate/agentrun.py). A `null` or empty patch is an
empty prediction, not graded (SWE-bench counts `None` and `""` alike); a patch over PATCH_LIMIT
is refused as it is read. Models and task ids become folders of the output, so neither may
leave it: a task id must be a plain folder name (it names one in the tasks folder), and a
model's `/` becomes `__` (SWE-bench's own rule: `org/model` is common). Neither name may hold a
control character: each is printed in a line of progress, which a line break would forge.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.evaluate.agentrun import AgentRun, agent_run

DEFAULT_MODEL = "default"
_NAME_BYTES = 255  # a file name's limit on Linux file systems
PATCH_LIMIT = 64 << 20  # grade --patch's own limit (daemon/scratch.py): a diff is never larger
# Each field's names: ours, then SWE-bench's.
TASK, PATCH = ("task", "instance_id"), ("patch", "model_patch")
MODEL = ("model", "model_name_or_path")
NO_AGENT_RUN = AgentRun.model_validate({})


@dataclass(frozen=True)
class Prediction:
    number: int  # its place among the file's non-blank lines, from 0: what --shard splits
    line: int  # the line number, from 1, for messages
    task: str
    model: str
    patch: str
    trial: int | None = None  # its number among its model's lines for the task; None: the one
    agent: AgentRun = NO_AGENT_RUN  # frozen: one for every line that says nothing of it

    @property
    def folder(self) -> Path:
        """Where its result goes, relative to the output folder."""
        task = Path(model_folder(self.model), self.task)
        return task if self.trial is None else task / f"trial-{self.trial}"

    @property
    def patch_bytes(self) -> bytes:
        """The patch as the file held it (an undecodable byte comes back as it was)."""
        return self.patch.encode("utf-8", "surrogateescape")

    @property
    def empty(self) -> bool:
        """A `null` or empty patch: unresolved, and nothing to grade."""
        return not self.patch

    @property
    def id(self) -> str:
        """`model/task` in the model's own name (the task, a plain name, is what follows the
        last `/`); a trial's, `model/task/trial-N`."""
        task = f"{self.model}/{self.task}"
        return task if self.trial is None else f"{task}/trial-{self.trial}"


@dataclass(frozen=True)
class BadLine:
    """A line that names no prediction to grade, and why: one clear line, nothing else lost."""

    number: int
    line: int
    error: str
    task: str | None = None
    model: str | None = None


def _has_control(name: str) -> bool:
    """A character a terminal or a line-based log would act on: a line break, an escape."""
    return any(unicodedata.category(char) in ("Cc", "Zl", "Zp") for char in name)


def plain_name(name: str) -> bool:
    """Whether `name` can name a file of a folder, and be printed in a line."""
    if _has_control(name):
        return False
    try:
        size = len(name.encode("utf-8", "surrogateescape"))  # as the file system will see it
    except UnicodeEncodeError:
        return False
    return name not in ("", ".", "..") and not {"/", "\0"} & set(name) and size <= _NAME_BYTES


def model_folder(model: str) -> str:
    """The model's folder name; ValueError when even that cannot be one."""
    if _has_control(model):
        raise ValueError(
            f"model {model!r} holds a control character (a line break, say): it cannot name a "
            "folder"
        )
    folder = model.replace("/", "__")
    if not plain_name(folder):
        raise ValueError(f"model {model!r} cannot name a folder")
    return folder


def _field(data: dict[str, Any], names: tuple[str, str]) -> Any:
    """The field by either name; ValueError when the line gives both, differently."""
    given = [(name, data[name]) for name in names if data.get(name) is not None]
    if len(given) == 2 and given[0][1] != given[1][1]:
        (ours, value), (theirs, other) = given
        raise ValueError(f"`{ours}` {value!r} and `{theirs}` {other!r} disagree: give one")
    return given[0][1] if given else None


def _named(data: dict[str, Any], names: tuple[str, str]) -> str | None:
    """The first name a line gives a field by, for its error's record."""
    return next((data[name] for name in names if isinstance(data.get(name), str)), None)


def _trial(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"trial {value!r} must be a whole number from 1")
    return value


def parse_line(number: int, line: int, text: str) -> Prediction | BadLine:
    try:
        data = json.loads(text)
    except ValueError as exc:
        return BadLine(number, line, f"not valid JSON ({getattr(exc, 'msg', exc)})")
    return parse_object(number, line, data)


def parse_object(number: int, line: int, data: Any) -> Prediction | BadLine:
    """One prediction of a file: a JSON object, a line's or a list's element."""
    if not isinstance(data, dict):
        return BadLine(number, line, "not a JSON object")
    try:
        task, patch, model = (_field(data, names) for names in (TASK, PATCH, MODEL))
    except ValueError as exc:
        model = _named(data, MODEL)
        if all(data.get(name) is None for name in MODEL):
            model = DEFAULT_MODEL
        return BadLine(number, line, str(exc), _named(data, TASK), model)
    if patch is None and ("patch" in data or "model_patch" in data):
        patch = ""  # null: an empty patch, as SWE-bench counts it
    model = DEFAULT_MODEL if model is None else model
    task_name = task if isinstance(task, str) else None
    model_name = model if isinstance(model, str) else None

    def bad(error: str) -> BadLine:
        return BadLine(number, line, error, task_name, model_name)

    error = _refused(task, patch, model)
    if error is not None:
        return bad(error)
    try:
        trial = _trial(data.get("trial"))
    except ValueError as exc:
        return bad(str(exc))
    agent = agent_run(data)
    if isinstance(agent, str):
        return bad(agent)
    return Prediction(number, line, task, model, patch, trial, agent)


def _refused(task: Any, patch: Any, model: Any) -> str | None:
    """Why the line's task, patch and model cannot be graded; None when they can."""
    if task is None:
        return "no task id (`task` or `instance_id`)"
    if not isinstance(task, str) or not plain_name(task):
        return f"task id {task!r} cannot name a task folder"
    if patch is None:
        return "no patch (`patch` or `model_patch`)"
    if not isinstance(patch, str):
        return "the patch must be a string"
    if len(patch.encode("utf-8", "surrogateescape")) > PATCH_LIMIT:
        return f"the patch is over {PATCH_LIMIT >> 20} MiB, too large for a diff"
    if not isinstance(model, str):
        return "the model must be a string"
    try:
        model_folder(model)
    except ValueError as exc:
        return str(exc)
    return None
