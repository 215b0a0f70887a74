"""A client for the upstream ssebench daemon (the public project's API), behind our `Daemon`.

Task containers of the public project already run that daemon; speaking its API lets our
server replace the stock MCP server there, and `grade` grade through it, as upstream's own SDK,
MCP server and evaluator do (its openapi.yaml, handlers and SDK: docs/upstream.md):
- its answers come back whole, stdout and stderr apart; the log is joined as upstream's MCP
  server shows it, `f"{stdout}\\n\\n{stderr}"`, and kept in memory for the current run only;
- a case passes when its `code` is 0; `code: -1` is any process that ended without an exit
  status (a signal), or a PoC run before any build: it fails, as upstream's evaluator counts it;
- hidden tests that do not apply (500 `git apply failed`) are intent tests that failed
  (`code: 1`, the message its log), as upstream's SDK has them; the functional tests then run;
- grading goes through the daemon's admin socket: `POST /prepare_grading` once (the agent's
  diff applied to the copy that is graded), then each action with `{"grading": true}`. An
  agent-facing listener refuses both (403), whatever our level says.
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
from ssebench.core.daemons.base import HttpApi, Timeouts, parse
from ssebench.core.errors import DaemonError, PatchError
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
# The start of the error a daemon gives for a diff that does not apply (its hidden tests, or
# the agent's diff at /prepare_grading): upstream's SDK reads exactly this.
NOT_APPLIED = "git apply failed"
# What a 403 means (openapi.yaml's x-access and x-difficulty-gate): grading asked of an
# agent-facing listener, or an action that listener withholds.
AGENT_FACING = (
    " (only the daemon's admin socket grades, and this listener is the agent's: give the admin "
    "socket, SSE_ADMIN_SOCKET, or --daemon-url unix:PATH)"
)
WITHHELD = (
    " (this listener withholds the action: the daemon's level is stricter than ours, or the "
    "agent's phase has ended)"
)


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


class Failure(_Answer):
    error: str


def unsupported_checks(checks: Sequence[Check]) -> list[Check]:
    """The checks no upstream action runs: third-party ones. They are reported as not run."""
    return [check for check in checks if check.key not in ACTIONS]


class UpstreamDaemon(HttpApi):
    """The upstream daemon's API (GET /version, /capabilities, /project; POST /tool/bencher;
    POST /prepare_grading when `grading`, which only its admin socket answers)."""

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
        self.prepared = False
        self.run_timeout = run_timeout
        self.pocs: list[str] = []
        # Only the current run's logs: a run starts with begin, which drops the older ones.
        self.logs: dict[str, bytes] = {}

    def explain(self, status: int, path: str) -> str:
        if status != 403:
            return ""
        if self.grading:
            return AGENT_FACING
        return WITHHELD if path.startswith("/tool/") else ""

    async def begin(self, plan: Sequence[Check]) -> dict[str, int | None]:
        """Cases per check; the upstream daemon runs each on the tree as it is then (its API
        has no call to take the tree once)."""
        self.logs.clear()
        if self.grading and not self.prepared:
            await self._prepare()
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

    async def _prepare(self) -> None:
        """The agent's diff applied to the copy grading runs on, once; a diff that does not
        apply is the grade's verdict (PatchError), as upstream's SDK has it."""
        path = "/prepare_grading"
        response = await self.request("POST", path, json={}, answers=(200, 500))
        if response.status_code == 500:
            error = parse(response, Failure.model_validate_json).error
            if not error.startswith(NOT_APPLIED):
                raise DaemonError(f"POST {path}: HTTP 500: {' '.join(error.split())[:200]}")
            raise PatchError("; ".join(line.strip() for line in error.splitlines() if line))
        self.prepared = True

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
        return {"poc": self.pocs[index]}  # it runs in what the last build built

    async def run_case(self, check: Check, index: int) -> CaseRun:
        action = ACTIONS.get(check.key)
        if action is None:
            raise DaemonError(f"the upstream daemon has no action for {check.name}")
        body = self._body(check, action, index)
        started = time.monotonic()
        answer = await self._bencher(action, body)
        seconds = time.monotonic() - started
        text = _utf8(answer.stdout) + b"\n\n" + _utf8(answer.stderr)
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

    async def _bencher(self, action: str, body: dict[str, Any]) -> BencherResult:
        """The action's result; hidden tests that do not apply are intent tests that failed."""
        path = f"/tool/bencher?action={action}"
        answers = (200, 500) if action == "intent_test" else (200,)
        response = await self.request(
            "POST", path, json=body, timeout=self.run_timeout, answers=answers
        )
        if response.status_code == 200:
            return parse(response, BencherResult.model_validate_json)
        error = parse(response, Failure.model_validate_json).error
        if not error.startswith(NOT_APPLIED):
            raise DaemonError(f"POST {path}: HTTP 500: {' '.join(error.split())[:200]}")
        return BencherResult(code=1, stdout="", stderr=error)

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
