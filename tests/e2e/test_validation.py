"""The orchestrator's `every_case` on real cases, which validation needs to see every PoC's
verdict (tests/unit/test_validation.py judges hand-made outcomes)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ssebench.core.orchestrator import run_checks
from ssebench.plugins.poc import POCS
from ssebench.testing import TaskHandle


def test_every_case_runs_past_the_first_failure(
    ssebench_task: Callable[..., TaskHandle],
) -> None:
    task = ssebench_task({"pocs": ["exit 139", "echo clean", "kill -SEGV $$"]})
    from ssebench.core.daemons.door import ServiceConfig, load_task
    from ssebench.core.daemons.inprocess import local_daemon

    async def passed(every_case: bool) -> list[bool]:
        config = ServiceConfig(load_task(task.path, task.registry.checks), task.registry, None)
        async with local_daemon(config) as daemon:
            found = await run_checks([POCS], None, daemon, every_case=every_case)
        return [case.passed for case in found.outcomes[0].cases]

    assert asyncio.run(passed(every_case=False)) == [False]
    assert asyncio.run(passed(every_case=True)) == [False, True, False]
