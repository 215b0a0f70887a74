"""The client for our own daemon's /v1 API (`ssebench daemon`, or the one embedded in `serve`)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import BinaryIO

import httpx

from ssebench.core.case import CaseRun, case_from_wire
from ssebench.core.check import Check
from ssebench.core.daemons.base import HttpApi, Timeouts, describe_error
from ssebench.core.errors import DaemonError
from ssebench.core.protocol import API_PREFIX, CheckList, Health

DEFAULT_CASE_TIMEOUT = 3600.0  # what the daemon gives a case whose task sets no timeout


class HttpDaemon(HttpApi):
    """Our own daemon over any httpx transport: TCP, or ASGI in this process.

    `local_logs`, given when the daemon app runs in this very process, maps a log id to the
    file the daemon spooled it to: a long log is then saved by the kernel instead of streamed.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        local_logs: Callable[[str], Path | None] | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        super().__init__(client, timeouts=timeouts)
        self.local_logs = local_logs
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

    def open_local_logs(self, cases: Sequence[CaseRun]) -> list[BinaryIO] | None:
        """The cases' logs as open files, or None to stream them over HTTP instead.

        None when the daemon is not in this process, or a log is not (or no longer) there:
        the HTTP route then answers for it, with the error a missing log deserves.
        """
        if self.local_logs is None:
            return None
        files: list[BinaryIO] = []
        try:
            for case in cases:
                path = self.local_logs(case.log_id)
                if path is None:
                    return None  # (the finally closes what was opened)
                files.append(path.open("rb"))
                size = os.fstat(files[-1].fileno()).st_size
                if size != case.log_size:
                    raise DaemonError(f"log {case.log_id}: {size} bytes, not {case.log_size}")
            opened, files = files, []  # handed over: the caller closes them
            return opened
        except OSError:
            return None
        finally:
            for file in files:
                file.close()
