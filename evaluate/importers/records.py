"""The records of the benchmarks that ship JSON (SEC-bench, ARVO), read one at a time: a JSON
file (one object, or a list of them), JSON lines, or a folder of JSON files (ARVO-Meta's
`meta/`). Each comes with where it is (`FILE`, `FILE:LINE`, `FILE: item N`); a record that
cannot be read or taken is its own `SourceError` in the stream, never the end of the rest.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.evaluate.importers.common import Imported, SourceError, Strict, validated


@dataclass(frozen=True)
class Raw:
    """One record as read: where it is, the file it is in, and its JSON value."""

    where: str
    path: Path
    data: object


def file_records(path: Path) -> list[Raw | SourceError]:
    """The records of one file (read whole, as JSON is); a file that cannot be read or holds
    none is a SourceError raised, a line of JSON lines that is not JSON one in the list."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise SourceError(str(path), "", f"cannot read: {why}") from None
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        return [Raw(str(path), path, whole)]
    if isinstance(whole, list):
        return [Raw(f"{path}: item {i}", path, item) for i, item in enumerate(whole)]
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise SourceError(str(path), "", "holds no record")
    return [_line(path, number, line) for number, line in lines]


def _line(path: Path, number: int, line: str) -> Raw | SourceError:
    try:
        return Raw(f"{path}:{number}", path, json.loads(line))
    except ValueError as exc:
        return SourceError(f"{path}:{number}", "", f"not JSON: {exc}")


def folder_records(files: Iterable[Path]) -> Iterator[Raw | SourceError]:
    """The records of each file in turn, one file read at a time; a file that cannot be read
    is its own SourceError."""
    for path in files:
        try:
            yield from file_records(path)
        except SourceError as exc:
            yield exc


def tasks(
    raws: Iterable[Raw | SourceError],
    model: type[Strict],
    key: str,
    make: Callable[[Any, Raw], Imported],
) -> Iterator[Imported | SourceError]:
    """A task of each record (taken as `model`, made by `make(record, raw)`), or the one line
    that refuses it; an id (the record's `key`) seen twice refuses the second."""
    ids: dict[str, str] = {}  # each task id, and where it was first
    for raw in raws:
        if isinstance(raw, SourceError):
            yield raw
            continue
        try:
            task = make(validated(model, raw.data, raw.where), raw)
        except SourceError as exc:
            yield exc
            continue
        if task.id in ids:
            why = f"{task.id} again (first at {ids[task.id]}): ids name folders"
            yield SourceError(raw.where, key, why)
            continue
        ids[task.id] = raw.where
        yield task
