"""A case's environment: an allow-list, never the daemon's own less ours.

What a build needs to find its tools and speak the user's language, the task's own variables
and `pass_env` names, the case's own folders, and the sanitizers' variables (their reports and
status ours: daemon/sanitizers.py). No credential of the evaluator's reaches a case.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping

from ssebench.daemon.confine.mechanism import Folders
from ssebench.daemon.confine.policy import CaseUser
from ssebench.daemon.sanitizers import report_options
from ssebench.daemon.task import Task

# What a case sees of the daemon's environment besides its own variables and `pass_env`:
# what a build needs to find its tools and speak the user's language, nothing else.
PASSED = ("PATH", "LANG", "TERM", "TZ")
PASSED_PREFIXES = ("LC_",)


def reachable(path: str, roots: Iterable[str]) -> bool:
    """Whether a case can reach `path`: by its name, or by where it leads, inside a root."""
    real = os.path.realpath(path)
    return any(
        name == root or name.startswith(root.rstrip("/") + "/")
        for root in roots
        for name in (os.path.normpath(path), real)
    )


@functools.lru_cache(maxsize=16)
def _reachable_path(path: str, roots: tuple[str, ...]) -> str:
    """$PATH less what `roots` do not reach: the same for every case of a daemon, so found once
    (each entry's realpath is a few system calls, for every case otherwise)."""
    kept = [entry for entry in path.split(":") if entry and reachable(entry, roots)]
    return ":".join(dict.fromkeys(kept))


def case_environment(
    environ: Mapping[str, str],
    task: Task,
    tree: str,
    folders: Folders,
    user: CaseUser,
    roots: Iterable[str] = ("/",),
    sanitizer_exit: int | None = None,
) -> dict[str, str]:
    """The allow-list: PATH (less the folders the case cannot reach, so a command is found
    where the case can run it), the locale, TERM and TZ, the task's `pass_env` names and its
    `default_env` (the daemon's value of each first); then its own TMPDIR, HOME, USER and
    LOGNAME, the task's `env`, SSE_TASK_DIR and SSE_SOURCE_DIR; and the sanitizers' variables,
    their reports and status ours (daemon/sanitizers.py)."""
    env = {
        name: value
        for name, value in environ.items()
        if name in PASSED or name.startswith(PASSED_PREFIXES)
    }
    env.update(task.passed_env(environ, tree))
    if "PATH" in env:
        env["PATH"] = _reachable_path(env["PATH"], tuple(roots))
    env.update(TMPDIR=folders.tmp, HOME=folders.home, USER=user.name, LOGNAME=user.name)
    env.update(task.case_env(tree))
    env.update(SSE_TASK_DIR=str(task.directory), SSE_SOURCE_DIR=tree)
    env.update(report_options(env, folders.reports, sanitizer_exit))
    return env
