"""`ssebench run --prediction-out FILE`: when the agent is done, its change to the task's tree
as the prediction line `grade --tasks` reads, so a benchmark run's containers make the
predictions file themselves.

The tree as shipped is copied aside before the agent starts (into ssebench's private folder,
which no case can reach, removed afterwards and by the guard should we die), and compared with
the tree the agent left once the agent and the server have stopped: no case is still writing.
The comparison is treediff's, which runs no git, so nothing the agent planted in the tree is
run or obeyed.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from ssebench.core.daemons.door import Task, copy_tree, make_folder, remove_folder
from ssebench.core.errors import ConfigError
from ssebench.evaluate.predictions import BadLine, parse_line
from ssebench.evaluate.treediff import diff_trees

EXIT_NOT_WRITTEN = 3


def prediction_line(task_id: str, model: str, patch: bytes) -> str:
    """One JSON line that `grade --tasks` reads back as exactly this prediction."""
    text = patch.decode("utf-8", "surrogateescape")  # any bytes; read back the same way
    line = json.dumps({"task": task_id, "model": model, "patch": text})
    read = parse_line(0, 1, line)
    if isinstance(read, BadLine):
        raise ConfigError(f"--prediction-out: {read.error}")
    return line


def prediction_name(task: Task, task_id: str | None, model: str) -> str:
    """The task id the prediction will name: a bad one, or a bad model, is refused before `run`
    binds a port or starts anything."""
    name = task_id if task_id is not None else task.directory.name
    prediction_line(name, model, b"")
    return name


@contextlib.contextmanager
def recorded(
    task: Task, out: Path, task_id: str | None, model: str
) -> Iterator[Callable[[int], int]]:
    """Keep the tree as shipped; what is yielded, given CMD's exit status once the agent and
    the server are gone, writes `out` and returns the status `run` ends with."""
    name = prediction_name(task, task_id, model)
    folder = make_folder("ssebench-shipped-")
    try:
        shipped = folder / "source"
        copy_tree(task.source, shipped)

        def finish(status: int) -> int:
            try:
                line = prediction_line(name, model, diff_trees(shipped, task.source))
                _write(out, line + "\n")
            except (OSError, ConfigError) as exc:
                print(f"ssebench: error: --prediction-out {out}: {exc}", file=sys.stderr)
                return EXIT_NOT_WRITTEN
            return status

        yield finish
    finally:
        remove_folder(folder)


def _write(path: Path, text: str) -> None:
    """Whole or not at all, as a result.json is: a reader never takes half a patch."""
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
