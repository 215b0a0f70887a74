"""A benchmark run's predictions: JSON lines (or a JSON list, as SWE-bench takes both), each a
prediction to grade or one clear error.

A line gives `task`, `patch` and optionally `model` (SWE-bench's `instance_id`, `model_patch`
and `model_name_or_path` are read too). A `null` or empty patch is an empty prediction, not
graded (SWE-bench counts `None` and `""` alike); a patch over PATCH_LIMIT is refused as it is
read. Models and task ids become folders of the output, so
neither may leave it: a task id must be a plain folder name (it names one in the tasks
folder), and a model's `/` becomes `__` (SWE-bench's own rule: `org/model` is common). Two
models whose folders would be one (`org/model` and `org__model`) are an error on the second,
never a shared verdict. Neither name may hold a control character: each is printed in a line
of progress, which a line break would forge.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.core.errors import ConfigError

DEFAULT_MODEL = "default"
_NAME_BYTES = 255  # a file name's limit on Linux file systems
PATCH_LIMIT = 64 << 20  # grade --patch's own limit (daemon/scratch.py): a diff is never larger


@dataclass(frozen=True)
class Prediction:
    number: int  # its place among the file's non-blank lines, from 0: what --shard splits
    line: int  # the line number, from 1, for messages
    task: str
    model: str
    patch: str

    @property
    def folder(self) -> Path:
        """Where its result goes, relative to the output folder."""
        return Path(model_folder(self.model), self.task)

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
        last `/`)."""
        return f"{self.model}/{self.task}"


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


def _plain_name(name: str) -> bool:
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
    if not _plain_name(folder):
        raise ValueError(f"model {model!r} cannot name a folder")
    return folder


def _field(data: dict[str, Any], names: tuple[str, str]) -> Any:
    return next((data[name] for name in names if data.get(name) is not None), None)


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
    task, patch = _field(data, ("task", "instance_id")), _field(data, ("patch", "model_patch"))
    if patch is None and ("patch" in data or "model_patch" in data):
        patch = ""  # null: an empty patch, as SWE-bench counts it
    model = _field(data, ("model", "model_name_or_path"))
    model = DEFAULT_MODEL if model is None else model
    task_name = task if isinstance(task, str) else None
    model_name = model if isinstance(model, str) else None

    def bad(error: str) -> BadLine:
        return BadLine(number, line, error, task_name, model_name)

    if task is None:
        return bad("no task id (`task` or `instance_id`)")
    if not isinstance(task, str) or not _plain_name(task):
        return bad(f"task id {task!r} cannot name a task folder")
    if patch is None:
        return bad("no patch (`patch` or `model_patch`)")
    if not isinstance(patch, str):
        return bad("the patch must be a string")
    if len(patch.encode("utf-8", "surrogateescape")) > PATCH_LIMIT:
        return bad(f"the patch is over {PATCH_LIMIT >> 20} MiB, too large for a diff")
    if not isinstance(model, str):
        return bad("the model must be a string")
    try:
        model_folder(model)
    except ValueError as exc:
        return bad(str(exc))
    return Prediction(number, line, task, model, patch)


def read_predictions(path: Path) -> list[Prediction | BadLine]:
    """Every non-blank line (or list element) in order; a second prediction for one model's
    task is an error."""
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the predictions: {exc.strerror or exc}") from None
    items: list[Prediction | BadLine] = []
    seen: dict[Path, Prediction] = {}
    elements = _list_elements(path, text)
    parse = parse_line if elements is None else parse_object
    for line, raw in _lines(text) if elements is None else elements:
        item = parse(len(items), line, raw)
        if isinstance(item, Prediction):
            first = seen.setdefault(item.folder, item)
            if first is not item:
                item = BadLine(item.number, line, _same_folder(item, first), item.task, item.model)
        items.append(item)
    return items


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """Each non-blank line and its number. Only a line feed ends a line: str.splitlines() would
    also split at characters JSON lets a string hold unescaped (U+2028, say)."""
    for line, raw in enumerate(text.split("\n"), start=1):
        if raw.strip():
            yield line, raw


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\n\r":  # JSON's whitespace
        at += 1
    return at


def _list_elements(path: Path, text: str) -> list[tuple[int, Any]] | None:
    """A JSON list's elements, each with the line it starts on; None for JSON lines (a file
    whose first value is not a list, or is a list with more after it: a line of its own)."""
    decoder, at = json.JSONDecoder(), _skip_space(text, 0)
    if not text.startswith("[", at):
        return None
    try:
        _, end = decoder.raw_decode(text, at)
    except ValueError as exc:
        raise ConfigError(f"{path}: not a JSON list of predictions: {exc}") from None
    if text[end:].strip():
        return None
    # The list parsed whole: each element is a value, then a comma or the closing bracket.
    elements: list[tuple[int, Any]] = []
    line, counted = 1, 0
    at = _skip_space(text, at + 1)
    while text[at] != "]":
        line, counted = line + text.count("\n", counted, at), at
        value, at = decoder.raw_decode(text, at)
        elements.append((line, value))
        at = _skip_space(text, at)
        at = _skip_space(text, at + 1) if text[at] == "," else at
    return elements


def _same_folder(item: Prediction, first: Prediction) -> str:
    if item.model == first.model:
        return f"the same model and task as line {first.line}"
    return (
        f"model {item.model!r} would share the folder {item.folder.as_posix()} with model "
        f"{first.model!r} of line {first.line}"
    )


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N`: the I-th of N shards, from 0 (as JOB_COMPLETION_INDEX and Slurm arrays count)."""
    index, slash, count = text.partition("/")
    if not (slash and index.isascii() and index.isdigit() and count.isascii() and count.isdigit()):
        raise ConfigError(f"--shard {text}: expected I/N, e.g. 0/4")
    if not 0 <= int(index) < int(count):
        raise ConfigError(f"--shard {text}: I must be from 0 to N-1")
    return int(index), int(count)


def in_shard(item: Prediction | BadLine, shard: tuple[int, int] | None) -> bool:
    """Every N-th line from the I-th: each line in exactly one shard, errors included."""
    return shard is None or item.number % shard[1] == shard[0]
