"""Where one daemon's cases run, made once at its start: what the case service owns.

The case user, the task as the cases see it, the runner copy of the tree (daemon/runnercopy.py),
the task's writable folders, each check's policy, the case folders, the spool, and the door to
the trusted core (daemon/confine/runner.py). A record the service holds and uses directly, not
a layer: it opens what it holds in order, and closes all of it, on failure too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ssebench.core.errors import ConfigError
from ssebench.daemon.config import ServiceConfig
from ssebench.daemon.confine.choice import binds, hides_by_permissions, is_confined
from ssebench.daemon.confine.policy import CaseUser, Grant, Policy
from ssebench.daemon.confine.pool import pool_size
from ssebench.daemon.confine.runner import Runner
from ssebench.daemon.confine.user import CaseUserError, case_user, own_user
from ssebench.daemon.folders import CaseFolders
from ssebench.daemon.guard import remove_folder, remove_tree
from ssebench.daemon.policies import policy_for, readable_task
from ssebench.daemon.runnercopy import RunnerCopy, SyncError
from ssebench.daemon.spool import Spool
from ssebench.daemon.task import Task
from ssebench.daemon.withheld import check_stash
from ssebench.daemon.writable import WritableFolders


@dataclass
class CasePlace:
    """`tree`: the runner copy as the cases see it (at the tree's own path where the mechanism
    binds) and where it lies; `roots`: what the cases may reach at all (for their PATH)."""

    user: CaseUser
    task: Task
    copy: RunnerCopy
    writable: WritableFolders
    tree: Grant
    policies: dict[str, Policy]
    roots: tuple[str, ...]
    folders: CaseFolders
    spool: Spool
    runner: Runner
    pool_size: int
    closing: Callable[[], None]

    @classmethod
    def open(cls, config: ServiceConfig) -> CasePlace:
        """Every part, made in order; ConfigError in one line for what the deployment must
        fix (no case user, a tree this process cannot read, a writable folder in use)."""
        task, mechanism = config.task, config.mechanism
        confined = is_confined(mechanism)
        with contextlib.ExitStack() as undo:
            spool = Spool(config.spool)
            undo.callback(spool.close)
            try:
                user = case_user(config.case_user) if confined else own_user()
            except CaseUserError as exc:
                raise ConfigError(str(exc)) from None
            enabled = [check.key for check in config.registry.at_level(config.level).enabled]
            check_stash(task, enabled, user, mechanism)
            seen, task_copy = readable_task(task, user.switched and hides_by_permissions(mechanism))
            if task_copy is not None:
                undo.callback(remove_folder, task_copy, remove_tree)
            copy = _runner_copy(task, user, config.tree)
            undo.callback(copy.close)
            writable = WritableFolders(task.writable, user, take_over=config.take_over)
            undo.callback(writable.close)
            tree = Grant(str(task.source) if binds(mechanism) else str(copy.path), str(copy.path))
            hidden = (spool.folder, *([config.log_dir] if config.log_dir is not None else []))
            policies = {
                key: policy_for(seen, key, tree, hidden=hidden, writable=writable.grants)
                for key in enabled
            }
            roots = {root for policy in policies.values() for root in policy.roots()}
            folders = CaseFolders(user)
            undo.callback(folders.close)
            runner = Runner(mechanism, user, grace=config.grace, log_limit=config.log_limit)
            closing = undo.pop_all().close
        return cls(user, seen, copy, writable, tree, policies,
                   tuple(sorted(roots)) if confined else ("/",), folders, spool, runner,
                   pool_size(confined), closing)  # fmt: skip

    def close(self) -> None:
        """End the supervisor (it kills whatever still runs), remove every folder made."""
        self.runner.close()
        self.closing()

    async def aclose(self) -> None:
        """close(), once the stops of cancelled cases and the removal of folders finished."""
        await self.runner.aclose()
        await self.folders.settle()
        self.close()


def _runner_copy(task: Task, user: CaseUser, tree: Path | None) -> RunnerCopy:
    """The runner copy, its first sync made (the tree as shipped, before any agent's change),
    or `tree` (a grade's scratch copy) taken as it is."""
    copy = RunnerCopy.of(task, user, tree)
    try:
        copy.prepare()
    except SyncError as exc:
        copy.close()
        raise ConfigError(
            f"{task.source}: cannot copy the tree for its cases ({exc.reason}): run "
            "ssebench as root, or as a user who can read the tree"
        ) from None
    return copy
