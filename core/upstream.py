"""A client for the upstream ssebench daemon (the public project's API), behind our `Daemon`.

Task containers of the public project already run that daemon; speaking its API lets our
server replace the stock MCP server there and give the same report as on our own daemon.
Its answers come back whole, stdout and stderr apart, so this client joins them (stdout, then
stderr: order across the two is lost) and keeps the logs of the current run in memory to
serve `log_chunks`, which our orchestrator expects from a daemon that spools logs.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from ssebench.core.check import CaseResult, Check
from ssebench.core.client import CONNECT_TIMEOUT, DaemonError

# Our check key -> the upstream action that runs it. Only these four exist upstream.
ACTIONS: dict[str, str] = {
    "build": "build",
    "pocs": "run_poc",
    "functional": "function_test",
    "intent": "intent_test",
}
# The upstream daemon gives no time limits; a build may legitimately take an hour.
RUN_TIMEOUT = 4 * 3600.0
# The queries answer at once; a daemon that stays silent this long must not hang test_patch.
QUERY_TIMEOUT = 60.0
_CHUNK = 64 * 1024


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


class UpstreamDaemon:
    """The upstream daemon's API (GET /version, /capabilities, /project; POST /tool/bencher).

    `grading` sends `{"grading": true}` with every action, as the evaluator does, which lifts
    the daemon's level gate. Without it, a 403 means the daemon's level withholds a check our
    level rules asked for: the two disagree on the level, an internal failure.
    """

    def __init__(
        self, client: httpx.AsyncClient, *, grading: bool = False, run_timeout: float = RUN_TIMEOUT
    ) -> None:
        self.client = client
        self.grading = grading
        self.run_timeout = run_timeout
        self.pocs: list[str] = []
        # Only the current run's logs: a run starts with case_counts, which drops the older ones.
        self.logs: dict[str, bytes] = {}

    async def _request(
        self, method: str, path: str, model: type[BaseModel], *, timeout: float = QUERY_TIMEOUT,
        json: dict[str, Any] | None = None,
    ) -> BaseModel:  # fmt: skip
        try:
            response = await self.client.request(
                method, path, json=json, timeout=httpx.Timeout(timeout, connect=CONNECT_TIMEOUT)
            )
        except httpx.HTTPError as exc:
            raise DaemonError(f"{method} {path}: {describe_error(exc)}") from exc
        if response.status_code != 200:
            why = " (the daemon's level withholds it: its level and ours disagree)"
            raise DaemonError(
                f"{method} {path}: HTTP {response.status_code}"
                f"{why if response.status_code == 403 else ''}: "
                f"{_one_line(response.text[:200])}"
            )
        try:
            return model.model_validate_json(response.content)
        except ValidationError as exc:
            message = _one_line(exc.errors()[0]["msg"])
            raise DaemonError(f"{method} {path}: malformed answer: {message}") from None

    async def case_counts(self, checks: list[Check]) -> dict[str, int | None]:
        self.logs.clear()
        caps = await self._request("GET", "/capabilities", Capabilities)
        assert isinstance(caps, Capabilities)
        single = {
            "build": caps.can_build,
            "functional": caps.has_function_test,
            "intent": caps.has_intent_test,
        }
        counts: dict[str, int | None] = {}
        for check in checks:
            if check.key == "pocs":
                counts[check.key] = len(await self._list_pocs(caps))
            elif check.key in single:
                counts[check.key] = int(single[check.key])
            else:
                counts[check.key] = None
        return counts

    async def _list_pocs(self, caps: Capabilities) -> list[str]:
        """/project's PoC paths, in order; each is one case, run by its path."""
        project = await self._request("GET", "/project", Project)
        assert isinstance(project, Project)
        if caps.poc_count != len(project.poc) or (project.poc and not caps.can_run_poc):
            # Which PoCs to run would be a guess, and a benchmark must not run a check short.
            raise DaemonError(
                f"/capabilities (can_run_poc {caps.can_run_poc}, poc_count {caps.poc_count}) "
                f"disagrees with the {len(project.poc)} PoC paths of /project"
            )
        self.pocs = project.poc
        return self.pocs

    async def run_case(self, check: Check, index: int) -> CaseResult:
        action = ACTIONS.get(check.key)
        if action is None:
            raise DaemonError(f"the upstream daemon has no action for {check.name}")
        body: dict[str, Any] = {"grading": self.grading}
        if action == "run_poc":
            if index >= len(self.pocs):
                raise DaemonError(f"no PoC {index}: the daemon listed {len(self.pocs)}")
            # The API gives run_poc only the path; the grading flag rides along when it is set.
            body = {"poc": self.pocs[index], **({"grading": True} if self.grading else {})}
        elif index != 0:
            raise DaemonError(f"{check.name} has one case upstream, not case {index}")
        started = time.monotonic()
        path = f"/tool/bencher?action={action}"
        answer = await self._request(
            "POST", path, BencherResult, json=body, timeout=self.run_timeout
        )
        assert isinstance(answer, BencherResult)
        seconds = time.monotonic() - started
        if action == "run_poc" and answer.code == -1:
            # -1 is the daemon's "nothing built yet": it says nothing about the patch.
            raise DaemonError(f"POST {path}: code -1, no build for the PoC to run against")
        text = _utf8(answer.stdout) + _utf8(answer.stderr)
        log_id = uuid.uuid4().hex
        self.logs[log_id] = text
        return CaseResult(
            index=index,
            passed=answer.code == 0,
            exit_code=answer.code,
            signal=None,
            timed_out=False,
            seconds=round(seconds, 3),
            log_id=log_id,
            log_size=len(text),
        )

    async def log_chunks(self, result: CaseResult) -> AsyncIterator[bytes]:
        text = self.logs.get(result.log_id)
        if text is None:
            raise DaemonError(f"no log {result.log_id}: only the current run's logs are kept")
        for start in range(0, len(text), _CHUNK):
            yield text[start : start + _CHUNK]

    def open_local_logs(self, results: Sequence[CaseResult]) -> None:
        return None  # its logs arrive in its answers, held here: nothing on our disk


def _utf8(text: str) -> bytes:
    """Bytes the daemon decoded with surrogateescape come back as they were; else replaced."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def describe_error(exc: Exception) -> str:
    """The exception's type, and its message when it has one (a timeout's is often empty)."""
    message = _one_line(str(exc))
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _one_line(text: str) -> str:
    """DaemonError messages are one line; an error page or a traceback is not."""
    return " ".join(text.split())
