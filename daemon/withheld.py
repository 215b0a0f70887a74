"""Withheld files outside the task folder: which a check's cases, or the agent of a level, may
not have, and their stash (daemon/confine/stash.py), shared by a root daemon's case supervisor
and `ssebench run`.

A task folder locked to root keeps the agent from what lies in it, and the case user's ACL
entries keep a case from it even under Landlock, down to a `stat`. A file outside it (ARVO's
/tmp/poc, a PoC under /opt) lies where the deployment's lock does not reach, in a folder that
anyone may look into: only moving it out of sight hides that it exists. System folders
(/usr, /etc...) are never moved from: ssebench does not take files from under the system.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ssebench.core.check import Check
from ssebench.core.errors import ConfigError
from ssebench.daemon.confine.choice import hides_by_permissions
from ssebench.daemon.confine.mechanism import Mechanism
from ssebench.daemon.confine.policy import CaseUser, inside
from ssebench.daemon.confine.stash import Stash, StashError, stash_root
from ssebench.daemon.guard import private_parent
from ssebench.daemon.task import Task

NEVER_MOVED = (
    *("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/boot"),
    *("/proc", "/sys", "/dev", "/run"),
)


def movable(path: str) -> bool:
    """Whether ssebench may move `path` away: below a top folder, and not the system's."""
    return path.count("/") >= 2 and not inside(path, NEVER_MOVED)


def outside(task: Task, withheld: Iterable[Path], granted: Iterable[Path]) -> tuple[str, ...]:
    """Where `withheld` task files really lie, those outside the task folder and the tree that
    are neither in a grant nor hold one (a granted file inside stays where it is), the
    outermost of them, each once."""
    folders = [os.path.realpath(task.directory), os.path.realpath(task.source)]
    grants = [os.path.realpath(path) for path in granted]
    found = [
        real
        for real in dict.fromkeys(os.path.realpath(path) for path in withheld)
        if not inside(real, folders)
        and not any(inside(real, [grant]) or inside(grant, [real]) for grant in grants)
    ]
    return tuple(sorted(p for p in found if not any(p != o and inside(p, [o]) for o in found)))


def moved_away(task: Task, check: str) -> tuple[str, ...]:
    """The files outside the task folder that the cases of check `check` may not read and
    ssebench may move away (a policy's `moved_away`). Not folders: a folder's `---` entry
    hides all it holds (its name shows), and overlayfs renames none of an image's own."""
    own = task.checks[check].files if check in task.checks else ()
    granted = (*task.files, *own)
    others = [p for key, t in task.checks.items() if key != check for p in t.files]
    withheld = [path for path in others if path not in granted]
    away = outside(task, withheld, [*granted, *task.readable])
    return tuple(path for path in away if movable(path) and not os.path.isdir(path))


def check_stash(task: Task, checks: Iterable[str], user: CaseUser, mechanism: Mechanism) -> None:
    """One line, at a daemon's start, for a withheld file of `checks` outside the task folder
    that its supervisor could not move out of sight while their cases run, where the case
    user's permissions would hide it from all but a `stat` (Landlock)."""
    if user.switched and hides_by_permissions(mechanism):
        check_movable(sorted({path for check in checks for path in moved_away(task, check)}))


def withheld_at_level(task: Task, enabled: Iterable[Check]) -> tuple[str, ...]:
    """The files outside the task folder that no check the level enables may read: those the
    agent may not read while it works at that level."""
    granted = task.granted(enabled)
    every = [path for table in task.checks.values() for path in table.files]
    withheld = [path for path in every if path not in granted]
    return outside(task, withheld, [*granted, *task.readable])


def check_movable(paths: Iterable[str]) -> None:
    """One line, at start, for a withheld file the stash cannot take: one on another file system
    than ssebench's private folder, or a mount point."""
    here = os.stat(private_parent().parent).st_dev
    for path in paths:
        try:
            info = os.lstat(path)
        except OSError:
            continue  # not there: nothing to move
        if info.st_dev != os.stat(os.path.dirname(path)).st_dev:
            raise ConfigError(f"{path} is a mount point: ssebench cannot move it out of sight")
        if info.st_dev != here:
            raise ConfigError(
                f"{path}: withheld from some cases, it lies on another file system than "
                f"{private_parent()}, where ssebench would move it out of their sight: set TMPDIR "
                "to a folder on its file system"
            )


def recover() -> list[str]:
    """Put back what killed ssebench processes left in the stash (root's only)."""
    if os.geteuid() != 0:
        return []
    try:
        return Stash(stash_root()).recover()
    except (OSError, StashError) as exc:
        return [f"cannot look into {stash_root()}: {exc}"]


def others_read(path: str) -> bool:
    """Whether a user with no claim on `path` reads it (by the bits for others)."""
    try:
        info = os.stat(path)
        way = [os.stat(folder).st_mode for folder in _ancestors(path)]
    except OSError:
        return False
    want = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(info.st_mode) else 0)
    return info.st_mode & want == want and all(mode & stat.S_IXOTH for mode in way)


def _ancestors(path: str) -> Iterator[str]:
    folder = os.path.dirname(path)
    while folder not in ("/", ""):
        yield folder
        folder = os.path.dirname(folder)


@contextlib.contextmanager
def kept_from_agent(
    task: Task, enabled: Iterable[Check], say: Callable[[str], None]
) -> Iterator[None]:
    """`ssebench run`'s lock, while the agent runs: as root, every file (and folder) outside the
    task folder that the level withholds moved out of every other user's sight (one line says
    which), and put back exactly as it was on the way out; one warning line names those every
    user can read still (without root, all). ConfigError, with nothing left away, for a file
    that cannot move."""
    paths = withheld_at_level(task, enabled)
    root = os.geteuid() == 0
    stash = Stash(stash_root())
    try:
        locked = _lock(stash, [path for path in paths if root and movable(path)])
        readable = [path for path in paths if path not in locked and others_read(path)]
        if locked:
            files = "file" if len(locked) == 1 else "files"
            say(f"ssebench: run: locked {len(locked)} withheld {files} outside the task folder "
                f"until the run ends: {', '.join(locked)}")  # fmt: skip
        if readable:
            why = "run as root to lock them"
            if root:
                why = "ssebench moves no top or system folder, nor a folder of an image's layers"
            say(f"ssebench: warning: run: every user can read these withheld files outside the "
                f"task folder while the agent runs ({why}): {', '.join(readable)}")  # fmt: skip
        yield
    finally:
        for problem in [*stash.close(), *stash.notes]:
            say(f"ssebench: warning: run: {problem}")


def _lock(stash: Stash, paths: list[str]) -> list[str]:
    """The paths kept away now (moved, or away already: the server's case supervisor may have
    moved them first, and would put them back should the server die); a folder that cannot
    move (overlayfs renames no folder of an image's own layers) is left where it is, a file
    is one line."""
    locked = []
    for path in paths:
        try:
            if stash.hold(path):
                locked.append(path)
        except StashError as exc:
            if not os.path.isdir(path):
                why = f"run: cannot lock a withheld file away from the agent: {exc}"
                raise ConfigError(why) from None
    return locked
