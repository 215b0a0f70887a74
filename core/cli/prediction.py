"""`ssebench run --prediction-out FILE`: when the agent is done, its change to the task's tree
as the prediction line `grade --tasks` reads, so a benchmark run's containers make the
predictions file themselves.

The tree as shipped is copied aside before the agent starts (into ssebench's private folder,
which no case can reach, removed afterwards and by the guard should we die), and compared with
the tree the agent left once the agent and the server have stopped: no case is still writing.
The comparison is treediff's, which runs no git, so nothing the agent planted in the tree is
run or obeyed. The line also carries how the agent got there: each test_patch call, as the
server recorded it in that private folder (core/calls.py), and the tokens and time of its
dialog file, when it wrote one (evaluate/agentrun.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.core.calls import read_calls
from ssebench.core.daemons.door import Task, copy_tree, make_folder, remove_folder
from ssebench.core.errors import ConfigError
from ssebench.evaluate.agentrun import from_dialog
from ssebench.evaluate.predictions import BadLine, parse_line
from ssebench.evaluate.treediff import diff_trees
from ssebench.evaluate.verdicts import write_whole

EXIT_NOT_WRITTEN = 3


def prediction_line(task_id: str, model: str, patch: bytes, **agent: Any) -> str:
    """One JSON line that `grade --tasks` reads back as exactly this prediction (and what the
    agent's run recorded: evaluate/agentrun.py's keys)."""
    text = patch.decode("utf-8", "surrogateescape")  # any bytes; read back the same way
    line = json.dumps({"task": task_id, "model": model, "patch": text, **agent})
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


@dataclass(frozen=True)
class Recording:
    """Where the server records each call (`calls`), and `finish(status)`: given CMD's exit
    status once the agent and the server are gone, it writes the line and returns the status
    `run` ends with."""

    calls: Path
    finish: Callable[[int], int]


@contextlib.contextmanager
def recorded(task: Task, out: Path, task_id: str | None, model: str) -> Iterator[Recording]:
    """Keep the tree as shipped, and a place for the calls' records, until the line is written."""
    name = prediction_name(task, task_id, model)
    folder = make_folder("ssebench-shipped-")
    since = time.time()
    try:
        shipped = folder / "source"
        copy_tree(task.source, shipped)
        calls = folder / "calls.jsonl"

        def finish(status: int) -> int:
            try:
                agent = _agent_record(calls, since)
                line = prediction_line(name, model, diff_trees(shipped, task.source), **agent)
                write_whole(out, line + "\n")
            except (OSError, ConfigError, ValueError) as exc:
                print(f"ssebench: error: --prediction-out {out}: {exc}", file=sys.stderr)
                return EXIT_NOT_WRITTEN
            return status

        yield Recording(calls, finish)
    finally:
        remove_folder(folder)


def _agent_record(calls: Path, since: float) -> dict[str, Any]:
    """The line's record of the agent's run: its calls, and what its dialog file says."""
    dialog, warning = from_dialog(os.environ, since)
    if warning is not None:
        print(f"ssebench: warning: {warning}", file=sys.stderr)
    records = [call.model_dump() for call in read_calls(calls)]
    return {"test_patch_calls": records, **dialog}
