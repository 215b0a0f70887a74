"""The orchestrator's view of a daemon, and the client for our own daemon's HTTP API.

Every fault (unreachable, timing out, a non-200 answer, malformed JSON, a log cut short)
becomes a DaemonError, which the edge turns into the spec's internal-failure text.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import BinaryIO, Protocol

import httpx
from pydantic import BaseModel, ValidationError

from ssebench.core.check import CaseResult, Check
from ssebench.core.protocol import API_PREFIX, CaseAnswer, CheckInfo, CheckList, Health

CONNECT_TIMEOUT = 10.0
# Health and the check list answer at once (they never wait for a run): a daemon that accepted
# the connection but stays silent this long is broken, and must not hang test_patch forever.
QUERY_TIMEOUT = 60.0
# A case answers once it finished; the daemon enforces the task's limit, this is the backstop.
RUN_MARGIN = 120.0


class DaemonError(Exception):
    """Testing itself failed: the patch is not responsible."""


class Daemon(Protocol):
    """What the orchestrator needs from a daemon, whichever API it speaks."""

    async def case_counts(self, checks: list[Check]) -> dict[str, int | None]:
        """Cases per check key; None for a check this daemon cannot run."""
        ...

    async def run_case(self, check: Check, index: int) -> CaseResult: ...

    def log_chunks(self, result: CaseResult) -> AsyncIterator[bytes]: ...

    def open_local_logs(self, results: Sequence[CaseResult]) -> list[BinaryIO] | None:
        """The cases' logs as open files when the daemon runs in this process, else None."""
        ...


class HttpDaemon:
    """Our own daemon (DESIGN's /v1 API), over any httpx transport: TCP, or ASGI in-process.

    `local_logs`, given when the daemon app runs in this very process, maps a log id to the
    file the daemon spooled it to: a long log is then saved by the kernel instead of streamed.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        local_logs: Callable[[str], Path | None] | None = None,
    ) -> None:
        self.client = client
        self.local_logs = local_logs
        self.timeouts: dict[str, float] = {}

    async def _get(self, path: str, model: type[BaseModel]) -> BaseModel:
        return _parse(await self._request("GET", path, timeout=QUERY_TIMEOUT), model)

    async def _request(
        self, method: str, path: str, *, timeout: float | None = None
    ) -> httpx.Response:
        try:
            response = await self.client.request(
                method,
                path,
                timeout=httpx.Timeout(timeout, connect=CONNECT_TIMEOUT),
            )
        except httpx.HTTPError as exc:
            raise DaemonError(f"{method} {path}: {_describe(exc)}") from exc
        if response.status_code != 200:
            body = _one_line(response.text[:200])
            raise DaemonError(f"{method} {path}: HTTP {response.status_code}: {body}")
        return response

    async def health(self) -> Health:
        answer = await self._get(f"{API_PREFIX}/health", Health)
        assert isinstance(answer, Health)
        return answer

    async def case_counts(self, checks: list[Check]) -> dict[str, int | None]:
        listed = await self._get(f"{API_PREFIX}/checks", CheckList)
        assert isinstance(listed, CheckList)
        infos: dict[str, CheckInfo] = {info.key: info for info in listed.checks}
        self.timeouts = {key: info.timeout for key, info in infos.items()}
        missing = [check.key for check in checks if check.key not in infos]
        if missing:
            # Our level rules already ran: a check we ask for that the daemon withholds means
            # the two disagree on the level, or on the plugins installed.
            raise DaemonError(f"the daemon does not offer {', '.join(missing)}")
        return {check.key: infos[check.key].cases for check in checks}

    async def run_case(self, check: Check, index: int) -> CaseResult:
        path = f"{API_PREFIX}/checks/{check.key}/cases/{index}/run"
        timeout = self.timeouts.get(check.key, 3600.0) + RUN_MARGIN
        answer = _parse(await self._request("POST", path, timeout=timeout), CaseAnswer)
        assert isinstance(answer, CaseAnswer)
        if answer.key != check.key or answer.index != index:
            raise DaemonError(f"POST {path}: answered for {answer.key} case {answer.index}")
        return CaseResult(
            index=index,
            passed=answer.passed,
            exit_code=answer.exit_code,
            signal=answer.signal,
            timed_out=answer.timed_out,
            seconds=answer.seconds,
            log_id=answer.log_id,
            log_size=answer.log_size,
        )

    async def log_chunks(self, result: CaseResult) -> AsyncIterator[bytes]:
        path = f"{API_PREFIX}/logs/{result.log_id}"
        received = 0
        try:
            timeout = httpx.Timeout(60.0, connect=CONNECT_TIMEOUT)
            async with self.client.stream("GET", path, timeout=timeout) as response:
                if response.status_code != 200:
                    raise DaemonError(f"GET {path}: HTTP {response.status_code}")
                # Decoded bytes: log_size counts the log itself, whatever the transfer encoding;
                # and unlike aiter_raw() this also reads a response whose body was preloaded.
                async for chunk in response.aiter_bytes():
                    received += len(chunk)
                    yield chunk
        except (httpx.HTTPError, httpx.StreamError) as exc:
            raise DaemonError(f"GET {path}: {_describe(exc)}") from exc
        if received != result.log_size:
            raise DaemonError(f"GET {path}: got {received} of {result.log_size} bytes")

    def open_local_logs(self, results: Sequence[CaseResult]) -> list[BinaryIO] | None:
        """The cases' logs as open files, or None to stream them over HTTP instead.

        None when the daemon is not in this process, or a log is not (or no longer) there:
        the HTTP route then answers for it, with the error a missing log deserves.
        """
        if self.local_logs is None:
            return None
        paths = [self.local_logs(result.log_id) for result in results]
        files: list[BinaryIO] = []
        try:
            for path, result in zip(paths, results, strict=True):
                if path is None:
                    return None  # (the finally closes what was opened)
                files.append(path.open("rb"))
                size = os.fstat(files[-1].fileno()).st_size
                if size != result.log_size:
                    raise DaemonError(f"log {result.log_id}: {size} bytes, not {result.log_size}")
            opened, files = files, []  # handed over: the caller closes them
            return opened
        except OSError:
            return None
        finally:
            for file in files:
                file.close()


def _one_line(text: str) -> str:
    """DaemonError messages are one line; an error page or a traceback is not."""
    return " ".join(text.split())


def _describe(exc: httpx.HTTPError | httpx.StreamError) -> str:
    """The exception's type, and its message when it has one (a timeout's is often empty)."""
    message = _one_line(str(exc))
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _parse(response: httpx.Response, model: type[BaseModel]) -> BaseModel:
    try:
        return model.model_validate_json(response.content)
    except ValidationError as exc:
        where = f"{response.request.method} {response.request.url.path}"
        message = _one_line(exc.errors()[0]["msg"])
        raise DaemonError(f"{where}: malformed answer: {message}") from None
