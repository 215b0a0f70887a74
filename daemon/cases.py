"""Where and how one daemon's cases run: what its level lets them reach, and their environment.

Each case gets the daemon's environment less ssebench's own settings, the task's `env`,
`SSE_TASK_DIR` and `SSE_SOURCE_DIR`, and a TMPDIR and HOME of its own, made empty for it and
removed after it. What it may read and write is the daemon's policy: the task files of the
checks the level enables, the source tree, its own folder; never the rest of the task folder,
the spool, the saved logs or the shared temporary folders.
"""

from __future__ import annotations

import asyncio
import functools
import os
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path

from ssebench.core.case import CaseRun
from ssebench.core.check import Check
from ssebench.core.errors import ConfigError
from ssebench.daemon.credentials import CaseUser, case_user
from ssebench.daemon.guard import make_folder, private_parent, remove_folder, remove_tree
from ssebench.daemon.isolation import Grant, Mechanism, Policy, system_paths
from ssebench.daemon.runner import GRACE_SECONDS, LOG_LIMIT, Runner
from ssebench.daemon.task import Task

UNCONFINED = Mechanism("none", "cases run unconfined")


def is_own_setting(name: str) -> bool:
    """ssebench's settings (SSE_DIFFICULTY, MCP_LOG_DIR, ...) are the daemon's, not the case's."""
    return name.startswith("SSE_") or name == "MCP_LOG_DIR"


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
    environ: Mapping[str, str], task: Task, case_dir: Path, roots: Iterable[str] = ("/",)
) -> dict[str, str]:
    """The daemon's environment less ssebench's settings, with the folders of $PATH the case
    cannot reach left out (so a command is found where the case can run it, under every
    mechanism alike), its own TMPDIR and HOME, the task's `env` and SSE_TASK_DIR/SOURCE_DIR."""
    env = {name: value for name, value in environ.items() if not is_own_setting(name)}
    if "PATH" in env:
        env["PATH"] = _reachable_path(env["PATH"], tuple(roots))
    env.update(TMPDIR=str(case_dir / "tmp"), HOME=str(case_dir / "home"))
    env.update(task.case_env())
    env.update(SSE_TASK_DIR=str(task.directory), SSE_SOURCE_DIR=str(task.source))
    return env


def policy_for(
    task: Task, enabled: Iterable[Check], *, hidden: Iterable[Path], user: CaseUser | None = None
) -> Policy:
    """What every case of a daemon at this level may reach (DESIGN.md's table)."""
    # Every daemon's folders (spools, case folders, grading copies) lie in private_parent().
    hide = {str(task.directory), str(private_parent()), *map(os.path.realpath, hidden)}
    paths = (*task.granted(enabled), *task.readable)
    return Policy(
        system=system_paths(network=task.network),
        readable=tuple(Grant(str(path), os.path.realpath(path)) for path in paths),
        writable=(str(task.source),),
        hidden=tuple(sorted(hide)),
        network=task.network,
        user=user,
        limits=task.limits,
    )


def writable_by(user: CaseUser, source: Path) -> None:
    """A non-root daemon runs cases as itself: it must be able to write the tree, or every
    build would fail and blame the patch."""
    if os.geteuid() != 0 and source.exists() and not os.access(source, os.W_OK | os.X_OK):
        raise ConfigError(
            f"{source}: the source tree is not writable by this user (uid {user.uid}), who "
            "runs the cases: run ssebench as the tree's owner, or as root"
        )


class Cases:
    """Runs one command as a case of this daemon: its own folder, its environment, confined."""

    def __init__(
        self,
        task: Task,
        enabled: Iterable[Check],
        *,
        hidden: Iterable[Path] = (),
        mechanism: Mechanism | None = None,
        grace: float = GRACE_SECONDS,
        log_limit: int = LOG_LIMIT,
    ) -> None:
        self.task = task
        mechanism = mechanism or UNCONFINED
        self.user = case_user(task.source)
        writable_by(self.user, task.source)
        confined = mechanism.name != UNCONFINED.name
        policy = policy_for(task, enabled, hidden=hidden, user=self.user if confined else None)
        self.roots = (*policy.roots(),) if confined else ("/",)
        # Made now, reachable by path for the case's user; removed by the guard should this
        # process die. Each case's folder inside is its own, made fresh and removed after it.
        self.root = make_folder("ssebench-cases-", reachable=True)
        self.runner = Runner(mechanism, policy, grace=grace, log_limit=log_limit)
        self._removals: set[asyncio.Future[None]] = set()  # folders of ended cases

    async def run(self, command: str, *, timeout: float, log_path: Path) -> CaseRun:
        case_dir = self.root / uuid.uuid4().hex
        for folder in (case_dir, case_dir / "tmp", case_dir / "home"):
            folder.mkdir(mode=0o700)
            if os.geteuid() == 0:
                os.chown(folder, self.user.uid, self.user.gid)
        try:
            return await self.runner.run(
                command,
                cwd=self.task.source,
                env=case_environment(os.environ, self.task, case_dir, self.roots),
                timeout=timeout,
                log_path=log_path,
                case_dir=case_dir,
            )
        finally:
            # Nothing of the case runs now: its folder goes while the next case starts (no
            # other case can reach it: each sees only its own).
            removal = asyncio.ensure_future(asyncio.to_thread(remove_tree, case_dir))
            self._removals.add(removal)
            removal.add_done_callback(self._removals.discard)

    def close(self) -> None:
        self.runner.close()
        remove_folder(self.root, remove_tree)

    async def aclose(self) -> None:
        """close(), once the stops of cancelled cases and the removal of folders finished."""
        await self.runner.aclose()
        if self._removals:
            await asyncio.wait(set(self._removals))
        self.close()
