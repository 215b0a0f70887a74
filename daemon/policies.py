"""What each check's cases may reach, and the task folder as they see it.

A case reads its own check's policy: the system, the top-level task files, its own check's
files (never another check's, at any level: a build at grading must not read the PoCs) and the
task's `readable` paths; it writes the runner copy and the task's `writable` folders.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from ssebench.core.errors import ConfigError
from ssebench.daemon.confine.policy import Grant, Policy, inside, system_paths
from ssebench.daemon.guard import make_folder, private_parent, remove_folder, remove_tree
from ssebench.daemon.scratch import copy_tree
from ssebench.daemon.task import Task
from ssebench.daemon.withheld import moved_away


def _both(paths: Iterable[Path]) -> list[str]:
    """Each path as named and where it leads."""
    return list(dict.fromkeys(p for path in paths for p in (str(path), os.path.realpath(path))))


def policy_for(
    task: Task,
    check: str,
    tree: Grant,
    *,
    hidden: Iterable[Path] = (),
    writable: tuple[Grant, ...] = (),
) -> Policy:
    """What the cases of check `check` may reach (DESIGN.md's table): the top-level files and
    their check's own; every other check's files are hidden wherever they lie (moved away,
    daemon/withheld.py). They write the tree (first) and the task's `writable` folders."""
    own = task.checks[check].files if check in task.checks else ()
    granted = (*task.files, *own)
    others = [p for key, t in task.checks.items() if key != check for p in t.files]
    withheld = _both([task.directory, *[p for p in others if p not in granted]])
    hide = {*withheld, str(private_parent()), *map(os.path.realpath, hidden)}
    return Policy(
        system=system_paths(network=task.network),
        readable=tuple(Grant(str(p), os.path.realpath(p)) for p in (*granted, *task.readable)),
        writable=(tree, *writable),
        hidden=tuple(sorted(hide)),
        withheld=tuple(withheld),
        public=(str(task.source),),
        moved_away=moved_away(task, check),
        network=task.network,
        limits=task.limits,
    )


def reads(
    task: Task, command: str, policy: Policy, policies: Mapping[str, Policy]
) -> tuple[str, ...]:
    """The granted task files `command` names (its PoC input, say) and those moved away for
    other checks: the case's user must read each, or the case is an internal failure."""
    granted = [grant.real for grant in policy.readable]
    named = [p for p in task.named_files(command) if inside(p, granted)]
    moved = sorted({p for other in policies.values() for p in other.moved_away})
    return tuple(dict.fromkeys([*named, *(p for p in moved if inside(p, granted))]))


def readable_task(task: Task, copy_needed: bool) -> tuple[Task, Path | None]:
    """The task as its cases see it: where the case user's permissions must hide withheld
    files (`copy_needed`: Landlock, as a user of their own) and the task folder is read-only
    (a dataset mounted so), no ACL entry can be written there: the cases then read a copy of
    the folder, ours (the folder returned, to remove)."""
    if not copy_needed or not os.statvfs(task.directory).f_flag & os.ST_RDONLY:
        return task, None
    folder = make_folder("ssebench-task-")
    try:
        copy_tree(task.directory, folder / task.directory.name)
    except OSError as exc:
        remove_folder(folder, remove_tree)
        why = f"cannot copy the read-only task folder {task.directory}: {exc}"
        raise ConfigError(why) from None
    return task.moved(folder / task.directory.name), folder
