"""Where and how one daemon's cases run: what its level lets them reach, and their environment.

Each case gets the daemon's environment less ssebench's own settings, the task's `env`,
`SSE_TASK_DIR` and `SSE_SOURCE_DIR`, and a TMPDIR and HOME of its own, made empty for it and
removed after it. What it may read and write is the daemon's policy: the task files of the
checks the level enables, the source tree, its own folder; never the rest of the task folder,
the spool, the saved logs or the shared temporary folders.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path

from ssebench.core.case import CaseRun
from ssebench.core.check import Check
from ssebench.daemon.guard import make_folder, private_parent, remove_folder
from ssebench.daemon.isolation import Mechanism, Policy
from ssebench.daemon.runner import GRACE_SECONDS, LOG_LIMIT, Runner
from ssebench.daemon.task import Task

UNCONFINED = Mechanism("none", "cases run unconfined")


def is_own_setting(name: str) -> bool:
    """ssebench's settings (SSE_DIFFICULTY, MCP_LOG_DIR, ...) are the daemon's, not the case's."""
    return name.startswith("SSE_") or name == "MCP_LOG_DIR"


def case_environment(environ: Mapping[str, str], task: Task, case_dir: Path) -> dict[str, str]:
    env = {name: value for name, value in environ.items() if not is_own_setting(name)}
    env.update(TMPDIR=str(case_dir / "tmp"), HOME=str(case_dir / "home"))
    env.update(task.case_env())
    env.update(SSE_TASK_DIR=str(task.directory), SSE_SOURCE_DIR=str(task.source))
    return env


def policy_for(
    task: Task, enabled: Iterable[Check], *, cases_root: Path, hidden: Iterable[Path]
) -> Policy:
    """What every case of a daemon at this level may reach (DESIGN.md's table)."""
    # Every daemon's folders (spools, case folders, grading copies) lie in private_parent().
    hide = {str(task.directory), str(private_parent()), *map(os.path.realpath, hidden)}
    return Policy(
        readable=tuple(str(path) for path in task.readable(enabled)),
        writable=(str(task.source), str(cases_root)),
        hidden=tuple(sorted(hide)),
        network=task.network,
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
        # Made now, so the policy can name it; removed by the guard should this process die.
        self.root = make_folder("ssebench-cases-")
        policy = policy_for(task, enabled, cases_root=self.root, hidden=hidden)
        self.runner = Runner(mechanism or UNCONFINED, policy, grace=grace, log_limit=log_limit)

    async def run(self, command: str, *, timeout: float, log_path: Path) -> CaseRun:
        case_dir = self.root / uuid.uuid4().hex
        (case_dir / "tmp").mkdir(parents=True)
        (case_dir / "home").mkdir()
        try:
            return await self.runner.run(
                command,
                cwd=self.task.source,
                env=case_environment(os.environ, self.task, case_dir),
                timeout=timeout,
                log_path=log_path,
                case_dir=case_dir,
            )
        finally:
            await asyncio.to_thread(shutil.rmtree, case_dir, True)

    def close(self) -> None:
        self.runner.close()
        remove_folder(self.root)
