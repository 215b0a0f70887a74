"""A client for the upstream ssebench daemon (the public project's API), behind our `Daemon`.

Task containers of the public project already run that daemon; speaking its API lets our
server replace the stock MCP server there and give the same report as on our own daemon.
Its answers come back whole, stdout and stderr apart, so this client joins them (stdout, then
stderr: order across the two is lost) and keeps the logs of the current run in memory, to
open as log sources as our orchestrator expects from a daemon that spools logs.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict

from ssebench.core.case import CaseRun
from ssebench.core.check import Check
from ssebench.core.daemons.base import HttpApi, Timeouts
from ssebench.core.errors import DaemonError
from ssebench.core.logsource import BytesLog, LogSource

# Our check key -> the upstream action that runs it. Only these four exist upstream.
ACTIONS: dict[str, str] = {
    "build": "build",
    "pocs": "run_poc",
    "functional": "function_test",
    "intent": "intent_test",
}
# The upstream daemon gives no time limits; a build may legitimately take an hour.
RUN_TIMEOUT = 4 * 3600.0


class _Answer(BaseModel):
    # Upstream may add fields in a later version; only the ones we read must be right.
    model_config = ConfigDict(extra="ignore", frozen=True)


class Version(_Answer):
    version: str


class Capabilities(_Answer):
    can_build: bool
    can_run_poc: bool
    poc_count: int
    has_function_test: bool
    has_intent_test: bool


class Project(_Answer):
    poc: list[str]


class BencherResult(_Answer):
    code: int
    stdout: str
    stderr: str


def unsupported_checks(checks: Sequence[Check]) -> list[Check]:
    """The checks no upstream action runs: third-party ones. They are reported as not run."""
    return [check for check in checks if check.key not in ACTIONS]


class UpstreamDaemon(HttpApi):
    """The upstream daemon's API (GET /version, /capabilities, /project; POST /tool/bencher).

    `grading` sends `{"grading": true}` with every action, as the evaluator does, which lifts
    the daemon's level gate. Without it, a 403 means the daemon's level withholds a check our
    level rules asked for: the two disagree on the level, an internal failure.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        grading: bool = False,
        run_timeout: float = RUN_TIMEOUT,
        timeouts: Timeouts | None = None,
    ) -> None:
        super().__init__(client, timeouts=timeouts)
        self.grading = grading
        self.run_timeout = run_timeout
        self.pocs: list[str] = []
        # Only the current run's logs: a run starts with begin, which drops the older ones.
        self.logs: dict[str, bytes] = {}

    def explain(self, status: int) -> str:
        return " (the daemon's level withholds it: its level and ours disagree)" * (status == 403)

    async def begin(self, plan: Sequence[Check]) -> dict[str, int | None]:
        """Cases per check; the upstream daemon runs each on the tree as it is then (its API
        has no call to take the tree once)."""
        self.logs.clear()
        caps = await self.query("GET", "/capabilities", Capabilities.model_validate_json)
        single = {
            "build": caps.can_build,
            "functional": caps.has_function_test,
            "intent": caps.has_intent_test,
        }
        counts: dict[str, int | None] = {}
        for check in plan:
            if check.key == "pocs":
                counts[check.key] = len(await self._list_pocs(caps))
            elif check.key in single:
                counts[check.key] = int(single[check.key])
            else:
                counts[check.key] = None
        return counts

    async def _list_pocs(self, caps: Capabilities) -> list[str]:
        """/project's PoC paths, in order; each is one case, run by its path."""
        project = await self.query("GET", "/project", Project.model_validate_json)
        if caps.poc_count != len(project.poc) or (project.poc and not caps.can_run_poc):
            # Which PoCs to run would be a guess, and a benchmark must not run a check short.
            raise DaemonError(
                f"/capabilities (can_run_poc {caps.can_run_poc}, poc_count {caps.poc_count}) "
                f"disagrees with the {len(project.poc)} PoC paths of /project"
            )
        self.pocs = project.poc
        return self.pocs

    def _body(self, check: Check, action: str, index: int) -> dict[str, Any]:
        if action != "run_poc":
            if index != 0:
                raise DaemonError(f"{check.name} has one case upstream, not case {index}")
            return {"grading": self.grading}
        if index >= len(self.pocs):
            raise DaemonError(f"no PoC {index}: the daemon listed {len(self.pocs)}")
        # The API gives run_poc only the path; the grading flag rides along when it is set.
        return {"poc": self.pocs[index], **({"grading": True} if self.grading else {})}

    async def run_case(self, check: Check, index: int) -> CaseRun:
        action = ACTIONS.get(check.key)
        if action is None:
            raise DaemonError(f"the upstream daemon has no action for {check.name}")
        body = self._body(check, action, index)
        started = time.monotonic()
        path = f"/tool/bencher?action={action}"
        answer = await self.query(
            "POST", path, BencherResult.model_validate_json, json=body, timeout=self.run_timeout
        )
        seconds = time.monotonic() - started
        if action == "run_poc" and answer.code == -1:
            # -1 is the daemon's "nothing built yet": it says nothing about the patch.
            raise DaemonError(f"POST {path}: code -1, no build for the PoC to run against")
        text = _utf8(answer.stdout) + _utf8(answer.stderr)
        log_id = uuid.uuid4().hex
        self.logs[log_id] = text
        return CaseRun(
            exit_code=answer.code,
            signal=None,
            timed_out=False,
            seconds=round(seconds, 3),
            key=check.key,
            index=index,
            passed=answer.code == 0,
            log_id=log_id,
            log_size=len(text),
        )

    async def open_log(self, case: CaseRun) -> LogSource:
        text = self.logs.get(case.log_id)
        if text is None:
            raise DaemonError(f"no log {case.log_id}: only the current run's logs are kept")
        return BytesLog(text)

    async def tree_changed(self) -> bool:
        return False  # it cannot tell


def _utf8(text: str) -> bytes:
    """Bytes the daemon decoded with surrogateescape come back as they were; else replaced."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")
