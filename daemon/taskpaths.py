"""task.toml's paths: task files, readable system paths, and the task paths commands name.

Task files are kept as their paths name them, symbolic links unresolved: cases name them by
those paths, and a link inside a declared folder is part of it (a venv's bin/python). Whether
a path is given away (the task folder, task.toml) is judged by where it really leads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ssebench.core.errors import ConfigError
from ssebench.daemon.confine.policy import SYSTEM

if TYPE_CHECKING:
    from ssebench.daemon.task import Task
    from ssebench.daemon.tomlrules import Context

# $SSE_TASK_DIR/<path> or ${SSE_TASK_DIR}/<path>, the path up to what ends a shell word.
_TASK_PATH = re.compile(r"\$(?:SSE_TASK_DIR\b|\{SSE_TASK_DIR\})/([^\s'\"`;|&<>()$\\]*)")

Fail = Callable[[str, str], ConfigError]


def path_error(path: Path | str, exc: OSError) -> str:
    """One short line: a path the file system refuses may be thousands of characters long."""
    text = str(path)
    shown = text if len(text) <= 80 else f"{text[:40]}...({len(text)} characters)"
    return f"{shown}: {exc.strerror or exc}"


def resolve(folder: Path, raw: str, fail: Callable[[str], ConfigError]) -> tuple[Path, bool]:
    """`raw` from `folder`, resolved, and whether it exists; one line when the system refuses."""
    if "\0" in raw:
        raise fail("must not contain a NUL character")
    try:
        resolved = (folder / raw).resolve()
        return resolved, resolved.exists()
    except OSError as exc:  # a name too long for the file system, say
        raise fail(path_error(raw, exc)) from None


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


def task_files(
    raw: object, context: Context, fail: Callable[[str], ConfigError]
) -> tuple[Path, ...]:
    """Task files (or folders) relative to the folder of task.toml, or absolute, as cases name
    them; each must exist (an absolute one may be the image's), and neither task.toml nor the
    task folder itself may be given away, by any path."""
    if not isinstance(raw, list) or not all(isinstance(item, str) and item for item in raw):
        raise fail("must be a list of paths (relative to the task folder, or absolute)")
    path = context["path"]
    found = []
    for item in raw:
        resolved, exists = resolve(path.parent, item, fail)
        if resolved == path or resolved == path.parent or resolved in path.parents:
            raise fail(f"{item}: the task folder and task.toml are never readable by a case")
        if not exists and (why := missing(item, resolved, context)) is not None:
            raise fail(why)
        found.append(lexical(path.parent, item))
    return tuple(found)


def readable_paths(raw: object, context: Context, fail: Fail) -> tuple[Path, ...]:
    """System paths a toolchain needs beyond the usual folders (/root/.pyenv, say): absolute,
    existing (or the image's), and not task files (those are `files`, granted by level)."""
    if not isinstance(raw, list) or not all(isinstance(item, str) and item for item in raw):
        raise fail("readable", "must be a list of absolute paths")
    path = context["path"]
    found = []
    for item in raw:

        def problem(text: str, item: str = item) -> ConfigError:
            return fail("readable", f"{item}: {text}")

        if not item.startswith("/"):
            raise problem("must be an absolute path (task files are `files`)")
        resolved, exists = resolve(path.parent, item, problem)
        if not exists and (why := missing(item, resolved, context)) is not None:
            raise fail("readable", why)
        if resolved == path.parent or path.parent in resolved.parents:
            raise problem("is in the task folder: task files are `files`, granted by level")
        found.append(lexical(path.parent, item))
    return tuple(found)


# What a writable folder may not be nor hold: the system, and the folders every case shares.
_NOT_WRITABLE = ("/", "/proc", "/dev", "/sys", "/run", "/tmp", "/var/tmp", "/home", "/root")


def writable_paths(raw: object, context: Context, fail: Fail) -> tuple[Path, ...]:
    """Folders outside the tree and the task folder that cases may write (`/out`): absolute,
    normalized, neither a system folder nor above one; a missing one is made when the daemon
    starts (so one of the image's needs nothing here)."""
    if not isinstance(raw, list) or not all(isinstance(item, str) and item for item in raw):
        raise fail("writable", "must be a list of absolute paths of folders")
    folder = context["path"].parent
    found = []
    for item in raw:

        def problem(text: str, item: str = item) -> ConfigError:
            return fail("writable", f"{item}: {text}")

        if not item.startswith("/") or os.path.normpath(item) != (item.rstrip("/") or "/"):
            raise problem("must be an absolute path, with no . or .. in it")
        resolved, exists = resolve(folder, item, problem)
        given = Path(item)
        system = (*SYSTEM, *_NOT_WRITABLE)
        if any(given == Path(top) or given in Path(top).parents for top in system):
            raise problem(
                "is a system folder or holds one: cases may write only a folder of theirs"
            )
        if resolved == folder or folder in resolved.parents or resolved in folder.parents:
            raise problem("is the task folder, in it or above it: cases never write task files")
        if exists and not resolved.is_dir():
            raise problem("is not a folder")
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


def named_task_paths(task: Task, text: str) -> Iterator[Path]:
    """Each task path `text` names, as `$SSE_TASK_DIR/<path>` or by the task folder's own path
    (the source tree's own paths aside)."""
    by_path = re.compile(re.escape(str(task.directory)) + r"/([^\s'\"`;|&<>()$\\]*)")
    for pattern in (_TASK_PATH, by_path):
        for match in pattern.finditer(text):
            named = lexical(task.directory, match.group(1))
            if not covered(named, (task.source,)):
                yield named


def check_references(task: Task, fail: Fail) -> None:
    """Every task path a command names, as `$SSE_TASK_DIR/<path>` or by the task folder's own
    path, must be a file its cases may read: a PoC that cannot open its input would otherwise
    pass as "no longer triggers". A path in `env` must be in some check's files at least."""
    by_path = re.compile(re.escape(str(task.directory)) + r"/([^\s'\"`;|&<>()$\\]*)")
    patterns = ((_TASK_PATH, "$SSE_TASK_DIR"), (by_path, str(task.directory)))
    for key, table in task.checks.items():
        for index, command in enumerate(table.cases):
            for named in _unreadable(task, command, (*task.files, *table.files), patterns):
                raise fail(
                    f"checks.{key}",
                    f"case {index} names {named}, which is in neither this check's files "
                    "nor the top-level files",
                )
    every = (*task.files, *(path for table in task.checks.values() for path in table.files))
    for name, value in task.env.items():
        for named in _unreadable(task, value, every, patterns[:1]):
            raise fail(
                f"env.{name}",
                f"names {named}, which is in neither a check's files nor the top-level files",
            )


def _unreadable(
    task: Task,
    text: str,
    allowed: tuple[Path, ...],
    patterns: Iterable[tuple[re.Pattern[str], str]],
) -> Iterator[str]:
    """Each task path `text` names (as the patterns find them) that lies outside `allowed`."""
    for pattern, shown in patterns:
        for match in pattern.finditer(text):
            named = lexical(task.directory, match.group(1))
            if covered(named, (task.source,)):
                continue  # the source tree is the cases' own
            if not covered(named, allowed):
                yield f"{shown}/{match.group(1)}"
