"""Where and how one daemon's cases run: the runner copy, each check's policy, the environment.

Every case runs on the daemon's runner copy of the tree (daemon/runnercopy.py), brought up to
date first, as the daemon's case user, confined by the trusted core (daemon/confine). What it
may read is its own check's policy: the system, the top-level task files, its own check's
files (never another check's, at any level: a build at grading must not read the PoCs) and the
task's `readable` paths; what it may write, the copy and its own folder. Its environment is an
allow-list, never the daemon's own less ours: no credential of the evaluator's reaches a case.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ssebench.core.check import Check
from ssebench.core.errors import ConfigError
from ssebench.daemon.confine.choice import UNCONFINED, binds, hides_by_permissions, is_confined
from ssebench.daemon.confine.mechanism import Folders, Mechanism
from ssebench.daemon.confine.policy import CaseUser, Grant, Policy, inside, system_paths
from ssebench.daemon.confine.pool import pool_size
from ssebench.daemon.confine.runner import GRACE_SECONDS, LOG_LIMIT, CaseEnd, Runner, RunnerError
from ssebench.daemon.confine.user import CaseUserError, case_user, own_user
from ssebench.daemon.guard import make_folder, private_parent, remove_folder, remove_tree
from ssebench.daemon.runnercopy import RunnerCopy, SyncError
from ssebench.daemon.sanitizers import report_options
from ssebench.daemon.scratch import copy_tree
from ssebench.daemon.task import Task
from ssebench.daemon.withheld import check_stash, moved_away
from ssebench.daemon.writable import WritableFolders

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
    where the case can run it), the locale, TERM and TZ, the task's `pass_env` names; then its
    own TMPDIR, HOME, USER and LOGNAME, the task's `env`, SSE_TASK_DIR and SSE_SOURCE_DIR; and
    the sanitizers' variables, their reports and status ours (daemon/sanitizers.py)."""
    names = {*PASSED, *task.pass_env}
    env = {
        name: value
        for name, value in environ.items()
        if name in names or name.startswith(PASSED_PREFIXES)
    }
    if "PATH" in env:
        env["PATH"] = _reachable_path(env["PATH"], tuple(roots))
    env.update(TMPDIR=folders.tmp, HOME=folders.home, USER=user.name, LOGNAME=user.name)
    env.update(task.case_env(tree))
    env.update(SSE_TASK_DIR=str(task.directory), SSE_SOURCE_DIR=tree)
    env.update(report_options(env, folders.reports, sanitizer_exit))
    return env


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


class Cases:
    """Runs one command as a case of this daemon: on the runner copy, in its own folder, with
    its check's policy, confined. `tree`: a grade's scratch copy of the task's tree, ours
    already, taken as the runner copy instead of a copy of the agent's. `take_over`: this
    daemon owns its machine (a fresh container of the task's image), so the task's writable
    folders are taken as the image has them (daemon/writable.py)."""

    def __init__(
        self,
        task: Task,
        enabled: Sequence[Check],
        *,
        hidden: Iterable[Path] = (),
        mechanism: Mechanism | None = None,
        user: str | None = None,
        grace: float = GRACE_SECONDS,
        log_limit: int = LOG_LIMIT,
        tree: Path | None = None,
        take_over: bool = False,
    ) -> None:
        self.mechanism = mechanism or UNCONFINED
        confined = is_confined(self.mechanism)
        try:
            self.user = case_user(user) if confined else own_user()
        except CaseUserError as exc:
            raise ConfigError(str(exc)) from None
        check_stash(task, [check.key for check in enabled], self.user, self.mechanism)
        self.task, self.task_copy = self._readable_task(task)
        self.copy = RunnerCopy.of(task, self.user, tree)
        try:
            self.copy.prepare()  # the tree as shipped, before any agent's change
        except SyncError as exc:
            self._close_copies()
            raise ConfigError(
                f"{task.source}: cannot copy the tree for its cases ({exc.reason}): run "
                "ssebench as root, or as a user who can read the tree"
            ) from None
        try:
            self.writable = WritableFolders(task.writable, self.user, take_over=take_over)
        except ConfigError:
            self._close_copies()
            raise
        seen = str(task.source) if binds(self.mechanism) else str(self.copy.path)
        self.tree = Grant(seen, str(self.copy.path))
        self.hidden = tuple(hidden)
        self.policies = {check.key: self.policy(check.key) for check in enabled}
        roots = {root for policy in self.policies.values() for root in policy.roots()}
        self.roots = tuple(sorted(roots)) if confined else ("/",)
        # Made now, reachable by path for the case's user; removed by the guard should this
        # process die. Each case's folder inside is its own, made fresh and removed after it.
        self.root = make_folder("ssebench-cases-", reachable=True)
        self.runner = Runner(self.mechanism, self.user, grace=grace, log_limit=log_limit)
        self._removals: set[asyncio.Future[None]] = set()  # folders of ended cases
        self.pool_size = pool_size(confined)
        self._coming: list[tuple[str, Folders]] = []  # the coming cases' checks and folders

    def _readable_task(self, task: Task) -> tuple[Task, Path | None]:
        """The task as its cases see it: where the case user's permissions must hide withheld
        files (Landlock) and the task folder is read-only (a dataset mounted so), no ACL entry
        can be written there: the cases then read a copy of the folder, ours."""
        if not (self.user.switched and hides_by_permissions(self.mechanism)):
            return task, None
        if not os.statvfs(task.directory).f_flag & os.ST_RDONLY:
            return task, None
        folder = make_folder("ssebench-task-")
        try:
            copy_tree(task.directory, folder / task.directory.name)
        except OSError as exc:
            remove_folder(folder, remove_tree)
            why = f"cannot copy the read-only task folder {task.directory}: {exc}"
            raise ConfigError(why) from None
        return task.moved(folder / task.directory.name), folder

    def policy(self, check: str) -> Policy:
        grants = self.writable.grants
        return policy_for(self.task, check, self.tree, hidden=self.hidden, writable=grants)

    async def run(
        self, command: str, check: str, *, timeout: float, log_path: Path,
        sanitizer_exit: int | None = None,
    ) -> CaseEnd:  # fmt: skip
        """`command` as a case of `check`, on the runner copy as last synced, its sanitizers'
        status `sanitizer_exit`. RunnerError when it cannot run (no start)."""
        folders = self._folders(check)
        policy = self._policy(check)
        env = case_environment(
            os.environ, self.task, self.tree.path, folders, self.user, self.roots, sanitizer_exit
        )
        try:
            return await self.runner.run(
                command, policy, cwd=Path(self.tree.path), env=env, timeout=timeout,
                log_path=log_path, case_dir=Path(folders.root), reads=self._reads(command, policy),
            )  # fmt: skip
        finally:
            # Nothing of the case runs now: its folder goes while the next case starts (no
            # other case can reach it: each sees only its own).
            self._remove(folders)

    async def prepare(self, checks: Sequence[str]) -> None:
        """Have the sandboxes of the coming cases made while nothing runs (pool.py), one for a
        case of each of `checks` in order (the daemon's guess; the first `pool_size`): those
        cases then start at once. Folders made for a case of the same check before are kept
        for it; the others go, with their sandboxes. A wrong guess costs nothing but the
        making; a sandbox that cannot be made is said by the case that needed it."""
        before, coming = list(self._coming), []
        for check in checks[: self.pool_size]:
            same = next((i for i, (key, _) in enumerate(before) if key == check), None)
            coming.append(before.pop(same) if same is not None else (check, self._new_folders()))
        for _, folders in before:
            self._remove(folders)
        self._coming = coming
        wanted = [(self._policy(check), Path(folders.root)) for check, folders in coming]
        with contextlib.suppress(RunnerError):
            await self.runner.prepare(wanted)

    def _policy(self, check: str) -> Policy:
        return self.policies.get(check) or self.policy(check)

    def _folders(self, check: str) -> Folders:
        """The case's own folders: the first made ahead for a case of `check`, else new."""
        same = next((i for i, (key, _) in enumerate(self._coming) if key == check), None)
        return self._coming.pop(same)[1] if same is not None else self._new_folders()

    def _new_folders(self) -> Folders:
        folders = Folders(str(self.root / uuid.uuid4().hex))
        folders.make(self.user)
        return folders

    def _remove(self, folders: Folders) -> None:
        removal = asyncio.ensure_future(asyncio.to_thread(remove_tree, Path(folders.root)))
        self._removals.add(removal)
        removal.add_done_callback(self._removals.discard)

    def _reads(self, command: str, policy: Policy) -> tuple[str, ...]:
        """The granted task files `command` names (its PoC input, say) and those moved away for
        other checks: the case's user must read each, or the case is an internal failure."""
        granted = [grant.real for grant in policy.readable]
        named = [p for p in self.task.named_files(command) if inside(p, granted)]
        moved = sorted({p for other in self.policies.values() for p in other.moved_away})
        return tuple(dict.fromkeys([*named, *(p for p in moved if inside(p, granted))]))

    def close(self) -> None:
        self.runner.close()
        remove_folder(self.root, remove_tree)
        self.writable.close()
        self._close_copies()

    def _close_copies(self) -> None:
        self.copy.close()
        if self.task_copy is not None:
            remove_folder(self.task_copy, remove_tree)
            self.task_copy = None

    async def aclose(self) -> None:
        """close(), once the stops of cancelled cases and the removal of folders finished."""
        await self.runner.aclose()
        if self._removals:
            await asyncio.wait(set(self._removals))
        self.close()


def log_owner(source: Path) -> tuple[int, int] | None:
    """Whose the saved long logs of this tree's cases are: the agent's, the tree's owner, when
    this process is root (so the agent can open the file the report names); else ours."""
    if os.geteuid() != 0:
        return None
    try:
        info = os.stat(source)
    except OSError:
        return None
    return info.st_uid, info.st_gid
