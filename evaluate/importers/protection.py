"""The `protected` list an imported task gets: what decides its build and its tests, as the
benchmark ships them, less what its reference fix changes.

A benchmark's task has PoCs and, as often as not, nothing else between a patch and `resolved`,
so nothing that decides how the PoC runs may be the patch's (docs/evaluating.md). Where the tree
is on this machine (`import upstream --source`), the list names the build files and test
folders that exist in it; where it lies only in the task's image, it names them by the tables
(core/toolfiles.py's build tools, the test and fuzzing folders) wherever they are. Either way a
path the reference fix changes stays the agent's: a glob never undoes the fix (a folder the fix
changes is protected file by file where the tree is here, and not at all where it is not).
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

from ssebench.core.patchparse import parse_patch
from ssebench.core.tomltext import toml_array
from ssebench.core.toolfiles import (
    BUILD_NAMES,
    BUILD_SUFFIXES,
    CHECK_FOLDERS,
    is_build_file,
    literal_glob,
)

COMMENT = (
    "# What decides the build and the tests, as shipped (less what the reference fix changes):\n"
    "# a graded patch cannot change it (docs/evaluating.md).\n"
)


@functools.lru_cache(maxsize=4)  # an importer asks first whether the fix holds a diff at all
def fix_paths(fix: bytes | None) -> frozenset[str]:
    """Every path the reference fix changes, adds or deletes."""
    if not fix:
        return frozenset()
    return frozenset(path for diff in parse_patch(fix) for path in (diff.old, diff.new) if path)


def protected_globs(tree: Path | None, fix: bytes | None) -> list[str]:
    """The globs for an imported task whose tree is `tree` (None: only its image has it)."""
    changed = fix_paths(fix)
    if tree is None:
        return _by_name(changed)
    return sorted(_from_tree(tree, changed))


def _by_name(changed: frozenset[str]) -> list[str]:
    builds = [*sorted(BUILD_NAMES), *(f"*{suffix}" for suffix in BUILD_SUFFIXES)]
    folders = {part for path in changed for part in PurePosixPath(path).parts[:-1]}
    kept = [f"{name}/" for name in sorted(CHECK_FOLDERS - folders)]
    back = [f"!{literal_glob(p)}" for p in sorted(changed) if is_build_file(PurePosixPath(p).name)]
    return [*builds, *kept, *back]


def _entries(root: Path, folder: str = "") -> Iterator[tuple[str, bool]]:
    """Each entry under `root` (no link followed, `.git` left out): its path and whether it is
    a folder, a folder before what it holds."""
    stack = [folder]
    while stack:
        here = stack.pop()
        try:
            found = sorted(os.scandir(root / here), key=lambda entry: entry.name, reverse=True)
        except OSError:
            continue  # a folder we cannot read: what it holds is not listed
        for entry in found:
            path = f"{here}/{entry.name}" if here else entry.name
            is_folder = stat.S_ISDIR(entry.stat(follow_symlinks=False).st_mode)
            yield path, is_folder
            if is_folder and entry.name != ".git":
                stack.append(path)


def _from_tree(tree: Path, changed: frozenset[str]) -> Iterable[str]:
    inside: list[str] = []  # the check folders found, each whole or file by file
    for path, is_folder in _entries(tree):
        if any(path.startswith(f"{folder}/") for folder in inside):
            continue
        name = PurePosixPath(path).name
        if is_folder and name in CHECK_FOLDERS:
            inside.append(path)
            if not any(p.startswith(f"{path}/") for p in changed):
                yield literal_glob(path) + "/"
            else:
                yield from (
                    literal_glob(file)
                    for file, is_dir in _entries(tree, path)
                    if not is_dir and file not in changed
                )
        elif not is_folder and is_build_file(name) and path not in changed:
            yield literal_glob(path)


def protected_lines(globs: list[str]) -> str:
    """task.toml's `protected` key with its comment."""
    return COMMENT + toml_array(globs, "protected") + "\n"
