"""What `validate` warns a task author about in task.toml itself, before any case runs.

Neither makes a task unsound, both make grades misleading: a `protected` glob that matches
nothing protects nothing (a typo reads like protection), and a granted file that is a link to
somewhere no case can read (a venv whose interpreter lives under /root/.pyenv) fails every
build with `exec: .../venv/bin/python: not found`, which reads like the agent's fault.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ssebench.core.daemons.door import SYSTEM, Task, unmatched_globs
from ssebench.core.toolfiles import Graft, known_name


def task_warnings(task: Task, graft: Graft | None = None) -> list[str]:
    """task.toml's warnings, and (`graft`: what the grades did to the fix) whether the fix
    changes protected paths or holds build outputs: grading would undo that part of it."""
    warnings = [
        f"protected: {glob} matches nothing in the source tree (a typo? as it is, it only "
        "keeps a patch from adding such a path)"
        for glob in unmatched_globs(task.source, task.protected)
        if not known_name(glob)
    ]
    warnings += _unreadable_links(task)
    if graft is not None and graft.reverted:
        paths = ", ".join(sorted(set(graft.reverted)))
        warnings.append(f"the fix changes protected paths, which grading puts back: {paths}")
    if graft is not None and graft.dropped:
        paths = ", ".join(sorted(graft.dropped))
        warnings.append(f"the fix holds build outputs, which grading drops: {paths}")
    return warnings


def _granted(task: Task) -> list[Path]:
    own = (path for table in task.checks.values() for path in table.files)
    return list(dict.fromkeys([*task.files, *own]))


def _links(root: Path) -> Iterator[Path]:
    """The symbolic links at or under `root` (none followed)."""
    if root.is_symlink():
        yield root
        return
    for here, folders, names in os.walk(root):
        folders.sort()
        for name in sorted([*folders, *names]):
            if os.path.islink(os.path.join(here, name)):
                yield Path(here, name)


def _under(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _entry(task: Task, target: str) -> str:
    """What would let a case read `target`: a `readable` folder below / (below a home folder,
    /root/.pyenv or /home/me/.local), or, inside the task folder, a `files` entry."""
    if _under(target, [str(task.directory)]):
        first = Path(target).relative_to(task.directory).parts[0]
        return f'add "{first}" to files'
    parts = Path(target).parts
    depth = 4 if parts[1:2] == ("home",) else 3
    return f'add "{Path(*parts[:depth])}" to readable'


def _unreadable_links(task: Task) -> Iterator[str]:
    """One warning per entry that would fix them, naming the first link it fixes."""
    granted = _granted(task)
    own = [os.path.realpath(path) for path in (*granted, task.source)]
    # The task folder is hidden from cases whatever folder holds it: only its grants are read.
    readable = own + [
        os.path.realpath(path)
        for path in (*SYSTEM, *map(str, task.readable))
        if os.path.lexists(path)
    ]
    found: dict[str, tuple[Path, str, int]] = {}
    for root in granted:
        for link in _links(root):
            target = os.path.realpath(link)
            hidden = _under(target, [str(task.directory)])
            if not os.path.exists(target) or _under(target, own if hidden else readable):
                continue
            fix = _entry(task, target)
            first, where, count = found.get(fix, (link, target, 0))
            found[fix] = (first, where, count + 1)
    for fix, (link, target, count) in found.items():
        shown = link.relative_to(task.directory) if link.is_relative_to(task.directory) else link
        more = f" (and {count - 1} more)" if count > 1 else ""
        yield (
            f"files: {shown}{more} links to {target}, which a case cannot read (no system "
            f"folder, not in readable): {fix}"
        )
