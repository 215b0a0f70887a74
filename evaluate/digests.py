"""What a verdict was graded from, as hashes: a rerun of a benchmark run reuses a saved verdict
only when the patch, the task and ssebench are the ones it was graded with (DESIGN.md).

A task is its folder and its source tree (task.toml's `source`, which may lie outside it), by
content: names, kinds, modes, file bytes and link targets, never times, so a task copied to
another machine keeps its hash while any edit, a built tree's new files included, changes it.
Nothing is followed through a symbolic link and nothing of the task is run or interpreted.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import tomllib
from importlib.metadata import version
from pathlib import Path


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.cache
def ssebench_version() -> str:
    return version("ssebench")


def _source(folder: Path) -> Path | None:
    """The task's source tree as its task.toml names it, when that can be read at all."""
    try:
        raw = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8")).get("source")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return None
    return (folder / raw).resolve() if isinstance(raw, str) and raw and "\0" not in raw else None


def _add_tree(digest: hashlib._Hash, root: Path, label: bytes) -> None:
    """Every entry under `root` in a fixed order, each as its kind, relative name and content."""
    for folder, dirs, files in os.walk(root, onerror=_raise):
        dirs.sort()
        for name in sorted([*dirs, *files]):
            path = os.path.join(folder, name)
            info = os.lstat(path)
            relative = os.fsencode(os.path.relpath(path, root))
            mode = b"%o" % info.st_mode
            if stat.S_ISLNK(info.st_mode):
                content = os.fsencode(os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                with open(path, "rb") as file:
                    content = hashlib.file_digest(file, "sha256").digest()
            else:
                content = b""
            for field in (label, relative, mode, content):
                digest.update(b"%d:" % len(field) + field)


def _raise(error: OSError) -> None:
    raise error


def task_sha256(folder: Path) -> str | None:
    """The task's hash; None when some of it cannot be read (then nothing is ever reused). A
    tree that is not on this machine is its image's: the image's ID, recorded beside the hash
    (`grader`), stands for it."""
    digest = hashlib.sha256()
    try:
        _add_tree(digest, folder, b"task")
        source = _source(folder)
        inside = source is not None and source.is_relative_to(folder.resolve())
        if source is not None and not inside and os.path.lexists(source):
            _add_tree(digest, source, b"source")
    except OSError:
        return None
    return digest.hexdigest()
