"""The client for our own daemon's /v1 API (`ssebench daemon`, or the one embedded in `serve`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import httpx

from ssebench.core.case import CaseRun, case_from_wire
from ssebench.core.check import Check
from ssebench.core.daemons.base import HttpApi, Timeouts, describe_error
from ssebench.core.errors import DaemonError
from ssebench.core.protocol import API_PREFIX, CheckList, Health

DEFAULT_CASE_TIMEOUT = 3600.0  # what the daemon gives a case whose task sets no timeout


class HttpDaemon(HttpApi):
    """Our own daemon in another process, over its /v1 HTTP API (`ssebench daemon`, or a
    sidecar's); a daemon in this process is called as the case service itself."""

    def __init__(self, client: httpx.AsyncClient, *, timeouts: Timeouts | None = None) -> None:
        super().__init__(client, timeouts=timeouts)
        self.case_timeouts: dict[str, float] = {}

    async def health(self) -> Health:
        return await self.query("GET", f"{API_PREFIX}/health", Health.model_validate_json)

    async def case_counts(self, checks: Sequence[Check]) -> dict[str, int | None]:
        listed = await self.query("GET", f"{API_PREFIX}/checks", CheckList.model_validate_json)
        infos = {info.key: info for info in listed.checks}
        self.case_timeouts = {key: info.timeout for key, info in infos.items()}
        missing = [check.key for check in checks if check.key not in infos]
        if missing:
            # Our level rules already ran: a check we ask for that the daemon withholds means
            # the two disagree on the level, or on the plugins installed.
            raise DaemonError(f"the daemon does not offer {', '.join(missing)}")
        return {check.key: infos[check.key].cases for check in checks}

    async def run_case(self, check: Check, index: int) -> CaseRun:
        path = f"{API_PREFIX}/checks/{check.key}/cases/{index}/run"
        limit = self.case_timeouts.get(check.key, DEFAULT_CASE_TIMEOUT)
        case = await self.query(
            "POST", path, case_from_wire, timeout=limit + self.timeouts.run_margin
        )
        if case.key != check.key or case.index != index:
            raise DaemonError(f"POST {path}: answered for {case.key} case {case.index}")
        return case

    async def log_chunks(self, case: CaseRun) -> AsyncIterator[bytes]:
        path = f"{API_PREFIX}/logs/{case.log_id}"
        received = 0
        try:
            timeout = self.timeout(self.timeouts.query)
            async with self.client.stream("GET", path, timeout=timeout) as response:
                if response.status_code != 200:
                    raise DaemonError(f"GET {path}: HTTP {response.status_code}")
                # Decoded bytes: log_size counts the log itself, whatever the transfer encoding;
                # and unlike aiter_raw() this also reads a response whose body was preloaded.
                async for chunk in response.aiter_bytes():
                    received += len(chunk)
                    yield chunk
        except (httpx.HTTPError, httpx.StreamError) as exc:
            raise DaemonError(f"GET {path}: {describe_error(exc)}") from exc
        if received != case.log_size:
            raise DaemonError(f"GET {path}: got {received} of {case.log_size} bytes")
