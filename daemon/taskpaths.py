"""task.toml's paths: task files, readable and writable folders, and the task paths commands name.

Task files are kept as their paths name them, symbolic links unresolved: cases name them by
those paths, and a link inside a declared folder is part of it (a venv's bin/python). Whether
a path is given away (the task folder, task.toml) is judged by where it really leads. A path
refused is a `problem` of the key being validated.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from pathlib import Path

from ssebench.daemon.confine.policy import SYSTEM
from ssebench.daemon.confine.stash import away
from ssebench.daemon.taskenv import variable_entry
from ssebench.daemon.tomlrules import Context, problem

# A task path in a command: the task folder (as $SSE_TASK_DIR/, ${SSE_TASK_DIR}/ or its own
# path), then the path up to what ends a shell word.
_WORD = r"/([^\s'\"`;|&<>()$\\]*)"
_TASK_PATH = re.compile(r"\$(?:SSE_TASK_DIR\b|\{SSE_TASK_DIR\})" + _WORD)


def path_error(path: Path | str, exc: OSError) -> str:
    """One short line: a path the file system refuses may be thousands of characters long."""
    text = str(path)
    shown = text if len(text) <= 80 else f"{text[:40]}...({len(text)} characters)"
    return f"{shown}: {exc.strerror or exc}"


def resolve(folder: Path, raw: str, shown: str = "") -> tuple[Path, bool]:
    """`raw` from `folder`, resolved, and whether it exists; one line (after `shown`) when the
    system refuses."""
    if "\0" in raw:
        raise problem(f"{shown}must not contain a NUL character")
    try:
        resolved = (folder / raw).resolve()
        return resolved, resolved.exists()
    except OSError as exc:  # a name too long for the file system, say
        raise problem(shown + path_error(raw, exc)) from None


def lexical(folder: Path, raw: str) -> Path:
    """`raw` from `folder`, made absolute and normalized, symbolic links left as they are."""
    return Path(os.path.normpath(folder / raw))


def missing(item: str, resolved: Path, context: Context) -> str | None:
    """Why a path that is not on this machine is refused; None when it is taken as the
    image's: an absolute path of a task loaded here to run in its image (`--backend docker`
    grades it there; inside the image, ssebench finds it)."""
    if item.startswith("/") and context["for_image"] and context["image"] is not None:
        return None
    if item.startswith("/") and context["image"] is not None:
        return (
            f"{item}: no such file or folder on this machine; if the task's image "
            f"{context['image']} has it, grade with --backend docker or run ssebench in the image"
        )
    return f"{item}: no such file or folder ({resolved})"


def task_files(raw: list[str], context: Context) -> tuple[Path, ...]:
    """Task files (or folders) relative to the folder of task.toml, or absolute, as cases name
    them; each must exist (an absolute one may be the image's, or out of sight in ssebench's
    stash), and neither task.toml nor the task folder itself may be given away, by any path."""
    path = context["path"]
    found = []
    for item in raw:
        resolved, exists = resolve(path.parent, item)
        if resolved == path or resolved == path.parent or resolved in path.parents:
            raise problem(f"{item}: the task folder and task.toml are never readable by a case")
        there = exists or away(str(resolved))
        if not there and (why := missing(item, resolved, context)) is not None:
            raise problem(why)
        found.append(lexical(path.parent, item))
    return tuple(found)


def readable_paths(raw: list[str], context: Context) -> tuple[Path, ...]:
    """System paths a toolchain needs beyond the usual folders (/root/.pyenv, say): absolute,
    existing (or the image's), and not task files (those are `files`, granted by level). An
    entry `$NAME` is kept as it is: the task finds the folders it names (daemon/taskenv.py)."""
    folder = context["path"].parent
    found = []
    for item in raw:
        if variable_entry(item) is not None:
            found.append(Path(item))
            continue
        if not item.startswith("/"):
            raise problem(f"{item}: must be an absolute path (task files are `files`)")
        resolved, exists = resolve(folder, item, f"{item}: ")
        if not exists and (why := missing(item, resolved, context)) is not None:
            raise problem(why)
        if resolved == folder or folder in resolved.parents:
            raise problem(
                f"{item}: is in the task folder: task files are `files`, granted by level"
            )
        found.append(lexical(folder, item))
    return tuple(found)


# What a writable folder may not be nor hold: the system, and the folders every case shares.
_NOT_WRITABLE = ("/", "/proc", "/dev", "/sys", "/run", "/tmp", "/var/tmp", "/home", "/root")


def writable_paths(raw: list[str], context: Context) -> tuple[Path, ...]:
    """Folders outside the tree and the task folder that cases may write (`/out`): absolute,
    normalized, neither a system folder nor above one; a missing one is made when the daemon
    starts (so one of the image's needs nothing here)."""
    folder = context["path"].parent
    found = []
    for item in raw:
        if not item.startswith("/") or os.path.normpath(item) != (item.rstrip("/") or "/"):
            raise problem(f"{item}: must be an absolute path, with no . or .. in it")
        resolved, exists = resolve(folder, item, f"{item}: ")
        given = Path(item)
        system = (*SYSTEM, *_NOT_WRITABLE)
        if any(given == Path(top) or given in Path(top).parents for top in system):
            raise problem(
                f"{item}: is a system folder or holds one: cases may write only a folder of theirs"
            )
        if resolved == folder or folder in resolved.parents or resolved in folder.parents:
            raise problem(
                f"{item}: is the task folder, in it or above it: cases never write task files"
            )
        if exists and not resolved.is_dir():
            raise problem(f"{item}: is not a folder")
        found.append(given)
    return tuple(found)


def covered(named: Path, roots: tuple[Path, ...]) -> bool:
    """Whether `named` lies in one of `roots`, by the path given (a symbolic link inside a
    declared folder is part of it) or by where both lead."""
    real = Path(os.path.realpath(named))
    return any(
        named == root or root in named.parents or real == target or target in real.parents
        for root in roots
        for target in (Path(os.path.realpath(root)),)
    )


@functools.lru_cache(maxsize=16)
def _by_path(directory: Path) -> re.Pattern[str]:
    """A task path named by the task folder's own path (made once a task, not once a command)."""
    return re.compile(re.escape(str(directory)) + _WORD)


def named_paths(
    directory: Path, source: Path, text: str, *, by_path: bool = True
) -> Iterator[tuple[str, Path]]:
    """Each task path `text` names, as written and as a path: as `$SSE_TASK_DIR/<path>`, and
    (`by_path`) by the task folder's own path; the source tree's own paths aside (the source
    tree is the cases' own)."""
    patterns = [(_TASK_PATH, "$SSE_TASK_DIR")]
    if by_path:
        patterns.append((_by_path(directory), str(directory)))
    for pattern, shown in patterns:
        for match in pattern.finditer(text):
            named = lexical(directory, match.group(1))
            if not covered(named, (source,)):
                yield f"{shown}/{match.group(1)}", named
