"""A benchmark run's predictions: JSON lines (or a JSON list, as SWE-bench takes both), each a
prediction to grade or one clear error (a line as evaluate/predictionline.py reads it).

Several lines of one model for one task are its trials, each graded as a verdict of its own
(`<model>/<task>/trial-N/`): numbered by their `trial`, or else in file order after the
numbers before them; a number given twice is an error on the second. Two models whose folders
would be one (`org/model` and `org__model`) are an error on the second, never a shared verdict.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ssebench.core.errors import ConfigError
from ssebench.evaluate.predictionline import DEFAULT_MODEL as DEFAULT_MODEL
from ssebench.evaluate.predictionline import PATCH_LIMIT as PATCH_LIMIT
from ssebench.evaluate.predictionline import BadLine as BadLine
from ssebench.evaluate.predictionline import Prediction as Prediction
from ssebench.evaluate.predictionline import model_folder as model_folder
from ssebench.evaluate.predictionline import parse_line as parse_line
from ssebench.evaluate.predictionline import parse_object as parse_object


def read_predictions(path: Path) -> list[Prediction | BadLine]:
    """Every non-blank line (or list element) in order, a model's several lines for one task
    numbered as its trials."""
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the predictions: {exc.strerror or exc}") from None
    items: list[Prediction | BadLine] = []
    elements = _list_elements(path, text)
    parse = parse_line if elements is None else parse_object
    for line, raw in _lines(text) if elements is None else elements:
        items.append(parse(len(items), line, raw))
    return _trials(items)


def _trials(items: list[Prediction | BadLine]) -> list[Prediction | BadLine]:
    """Each model's lines for a task as its trials (a lone line without `trial` keeps the plain
    folder); a line that would share a folder (another model's, or a trial number already
    taken) is an error."""
    owners: dict[Path, Prediction] = {}  # each model/task folder's first line
    taken: dict[Path, dict[int, Prediction]] = {}  # and its trials, by number
    told: set[Path] = set()  # folders whose lines number their trials
    numbered: list[Prediction | BadLine] = []
    for item in items:
        if isinstance(item, Prediction):
            base = replace(item, trial=None).folder
            if item.trial is not None:
                told.add(base)
            item = _numbered(item, owners.setdefault(base, item), taken.setdefault(base, {}))
        numbered.append(item)
    lone = {base for base, trials in taken.items() if len(trials) == 1} - told
    return [
        replace(item, trial=None)
        if isinstance(item, Prediction) and item.folder.parent in lone
        else item
        for item in numbered
    ]


def _numbered(
    item: Prediction, first: Prediction, trials: dict[int, Prediction]
) -> Prediction | BadLine:
    """`item` as a trial of its folder (its own number, else the next after those so far), or
    why it cannot be."""
    trial = item.trial if item.trial is not None else max(trials, default=0) + 1
    if first.model != item.model or trial in trials:
        error = _same_folder(item, first if first.model != item.model else trials[trial], trial)
        return BadLine(item.number, item.line, error, item.task, item.model)
    trials[trial] = numbered = replace(item, trial=trial)
    return numbered


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


def _same_folder(item: Prediction, first: Prediction, trial: int) -> str:
    if item.model == first.model:
        return f"trial {trial} of the same model and task as line {first.line}"
    return (
        f"model {item.model!r} would share the folder {replace(item, trial=None).folder.as_posix()}"
        f" with model {first.model!r} of line {first.line}"
    )


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N`: the I-th of N shards, from 0 (as JOB_COMPLETION_INDEX and Slurm arrays count)."""
    index, slash, count = text.partition("/")
    shards = int(count) if count.isascii() and count.isdigit() else None
    rule = f"0/{shards} to {shards - 1}/{shards}" if shards else "0/4 to 3/4, say"
    if not (slash and index.isascii() and index.isdigit() and shards is not None):
        raise ConfigError(f"--shard {text}: expected I/N, shard I of N counted from 0 ({rule})")
    if shards == 0:
        raise ConfigError(f"--shard {text}: N must be at least 1")
    if int(index) >= shards:
        raise ConfigError(f"--shard {text}: I must be from 0 to N-1 ({rule})")
    return int(index), shards


def in_shard(item: Prediction | BadLine, shard: tuple[int, int] | None) -> bool:
    """Every N-th line from the I-th: each line in exactly one shard, errors included."""
    return shard is None or item.number % shard[1] == shard[0]
