"""The client for our own daemon's /v1 API (`ssebench daemon`, or the one embedded in `serve`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import httpx

from ssebench.core.case import CaseRun
from ssebench.core.check import Check
from ssebench.core.daemons.base import HttpApi, Timeouts, describe_error
from ssebench.core.errors import DaemonError
from ssebench.core.logsource import LogSource
from ssebench.core.protocol import API_PREFIX, CallAnswer, CallState, Health, case_from_wire

DEFAULT_CASE_TIMEOUT = 3600.0  # what the daemon gives a case whose task sets no timeout


class HttpDaemon(HttpApi):
    """Our own daemon in another process, over its /v1 HTTP API (`ssebench daemon`, or a
    sidecar's); a daemon in this process is called as the case service itself.

    `blocking` reaches the same daemon for logs, which are read in a worker thread: a blocking
    client takes a 1 GiB log at about twice the async one's speed (bench/RESULTS.md).
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        blocking: httpx.Client,
        *,
        timeouts: Timeouts | None = None,
    ) -> None:
        super().__init__(client, timeouts=timeouts)
        self.blocking = blocking
        self.case_timeouts: dict[str, float] = {}
        self.call = ""  # the call begun last: its runs name it

    async def health(self) -> Health:
        return await self.query("GET", f"{API_PREFIX}/health", Health.model_validate_json)

    async def begin(self, plan: Sequence[Check]) -> dict[str, int | None]:
        keys = [check.key for check in plan]
        answer = await self.query(
            "POST", f"{API_PREFIX}/calls", CallAnswer.model_validate_json, json={"checks": keys}
        )
        infos = {info.key: info for info in answer.checks}
        missing = [key for key in keys if key not in infos]
        if missing:
            # Our level rules already ran: a check we ask for that the daemon withholds means
            # the two disagree on the level, or on the plugins installed.
            raise DaemonError(f"the daemon does not offer {', '.join(missing)}")
        self.case_timeouts = {key: info.timeout for key, info in infos.items()}
        self.call = answer.call
        return {key: infos[key].cases for key in keys}

    async def run_case(self, check: Check, index: int) -> CaseRun:
        path = f"{API_PREFIX}/checks/{check.key}/cases/{index}/run"
        limit = self.case_timeouts.get(check.key, DEFAULT_CASE_TIMEOUT)
        case = await self.query(
            "POST",
            f"{path}?call={self.call}" if self.call else path,
            case_from_wire,
            timeout=limit + self.timeouts.run_margin,
        )
        if case.key != check.key or case.index != index:
            raise DaemonError(f"POST {path}: answered for {case.key} case {case.index}")
        return case

    async def tree_changed(self) -> bool:
        if not self.call:
            return False
        path = f"{API_PREFIX}/calls/{self.call}"
        return (await self.query("GET", path, CallState.model_validate_json)).changed

    async def open_log(self, case: CaseRun) -> LogSource:
        return HttpLog(self, f"{API_PREFIX}/logs/{case.log_id}", case.log_size)


class HttpLog:
    """A log in the daemon's spool, read over HTTP: a part by a Range request (the head and the
    end, which the tail rule reads), the whole as one stream (what a save writes)."""

    def __init__(self, api: HttpDaemon, path: str, size: int) -> None:
        self.api = api
        self.path = path
        self.size = size

    def read(self, offset: int, count: int) -> bytes:
        count = max(0, min(count, self.size - offset))
        if not count:
            return b""
        if count == self.size:
            return b"".join(self.chunks())
        part = f"bytes={offset}-{offset + count - 1}"
        data = b"".join(self._get(part))
        if len(data) != count:
            raise DaemonError(f"GET {self.path} {part}: got {len(data)} bytes")
        return data

    def chunks(self) -> Iterator[bytes]:
        received = 0
        for chunk in self._get(None):
            received += len(chunk)
            yield chunk
        if received != self.size:
            raise DaemonError(f"GET {self.path}: got {received} of {self.size} bytes")

    def _get(self, part: str | None) -> Iterator[bytes]:
        """The answer's body: the whole log (200), or the `part` a Range asks for (206)."""
        where = f"GET {self.path}" + (f" {part}" if part else "")
        headers, status = ({"Range": part}, 206) if part else ({}, 200)
        try:
            timeout = self.api.timeout(self.api.timeouts.query)
            with self.api.blocking.stream(
                "GET", self.path, headers=headers, timeout=timeout
            ) as response:
                if response.status_code != status:
                    raise DaemonError(f"{where}: HTTP {response.status_code}")
                # Decoded bytes: log_size counts the log itself, whatever the transfer encoding;
                # and unlike iter_raw() this also reads a response whose body was preloaded.
                yield from response.iter_bytes()
        except (httpx.HTTPError, httpx.StreamError) as exc:
            raise DaemonError(f"{where}: {describe_error(exc)}") from exc

    def fileno(self) -> int | None:
        return None

    def close(self) -> None:
        pass
