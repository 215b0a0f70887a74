"""What a task gives its cases of the environment beyond the allow-list, and the folders that
environment names for them to read.

`env` is the task's, whatever the daemon's environment says. `default_env` is an image's
environment (its Dockerfile's `ENV`: `GOFLAGS = "-mod=vendor"`, `GOPATH = "/go"`): in the image
the daemon has the same values, and on a host the user's own value of a name wins (a `--source`
run's `GOPATH`), the task's only filling in what the user left unset. `pass_env` names come from
the daemon's environment alone. A `readable` entry `$NAME` (`$GOPATH`) is the folder that
environment names, wherever it is on this machine: a toolchain's cache, which a case must read
but no path in task.toml could name for every machine.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from ssebench.daemon.tomlrules import problem

NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# What expands in `env` and `default_env` values: these two, as $NAME or ${NAME}; nothing else.
_FOLDER = re.compile(r"\$(?:(SSE_TASK_DIR|SSE_SOURCE_DIR)\b|\{(SSE_TASK_DIR|SSE_SOURCE_DIR)\})")
_NAMED = re.compile(rf"\$({NAME})")


def expand_folders(values: Mapping[str, str], folders: Mapping[str, str]) -> dict[str, str]:
    """`values` with $SSE_TASK_DIR and $SSE_SOURCE_DIR replaced by `folders`' paths."""
    return {
        name: _FOLDER.sub(lambda found: folders[found[1] or found[2]], value)
        for name, value in values.items()
    }


def chosen(
    environ: Mapping[str, str], pass_env: Iterable[str], defaults: Mapping[str, str]
) -> dict[str, str]:
    """The daemon's own value of every `pass_env` and `default_env` name it has, and the
    task's default of each it lacks (an empty value is a value: a user may clear one)."""
    own = {name: environ[name] for name in (*pass_env, *defaults) if name in environ}
    return {**defaults, **own}


def variable_entry(raw: str) -> str | None:
    """The name a `readable` entry `$NAME` stands for; None for a path."""
    if not raw.startswith("$"):
        return None
    if not (found := _NAMED.fullmatch(raw)):
        raise problem(f"{raw}: a variable is $NAME, the whole entry")
    return found[1]


def named_folders(name: str, value: str, task_folder: Path) -> list[Path]:
    """The folders `$name`'s value names (a list, as GOPATH may be), those on this machine: a
    cache not made yet grants nothing. Never `/`, the task folder or what it holds."""
    found = []
    for item in value.split(":"):
        if not item:
            continue
        shown = f"${name} is {item}"
        if not item.startswith("/"):
            raise problem(f"{shown}: cases read it by an absolute path only")
        real = Path(os.path.realpath(item))
        if real == Path("/"):
            raise problem(f"{shown}: that is the whole machine")
        if real == task_folder or task_folder in real.parents:
            raise problem(f"{shown}: in the task folder, whose files are granted by level")
        if real.exists():
            found.append(Path(os.path.normpath(item)))
    return found
