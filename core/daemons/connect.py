"""Choosing and opening a daemon client at an address: our /v1 API, the upstream one, or either.

A task container may start its daemon after our server, so opening never fails because nothing
answers: the connection says so, and every call probes again until a daemon is found; until
then each call raises DaemonError, which test_patch reports as the internal-failure text.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import httpx
from pydantic import ValidationError

from ssebench.core.case import CaseRun
from ssebench.core.check import Check
from ssebench.core.daemons.base import Timeouts, describe_error
from ssebench.core.daemons.native import HttpDaemon
from ssebench.core.daemons.upstream import UpstreamDaemon, Version, unsupported_checks
from ssebench.core.errors import ConfigError, DaemonError
from ssebench.core.logsource import LogSource
from ssebench.core.orchestrator import Daemon
from ssebench.core.protocol import API_PREFIX, Health
from ssebench.core.settings import DAEMON_APIS

log = logging.getLogger("ssebench")

SOCKET_VARIABLE = "SSE_DAEMON_SOCKET"
TCP_VARIABLE = "SSE_AGENT_DOCKER"
ADMIN_VARIABLE = "SSE_ADMIN_SOCKET"  # the upstream daemon's admin socket: the one that grades
UNIX = "unix:"  # --daemon-url unix:PATH: a Unix socket
PROBE_TIMEOUT = 5.0
M = TypeVar("M")


@dataclass(frozen=True)
class Location:
    """Where the daemon listens: a base URL, through a Unix socket when `uds` is set."""

    url: str
    uds: str | None = None

    def __str__(self) -> str:
        return f"unix:{self.uds}" if self.uds else self.url


def daemon_location(
    url: str | None, environ: Mapping[str, str] | None = None, *, grading: bool = False
) -> Location | None:
    """A given URL first (a flag overrides the environment; `unix:PATH` a socket), then, to
    grade, the upstream daemon's admin socket in SSE_ADMIN_SOCKET, then the upstream SDK's
    order: the socket in SSE_DAEMON_SOCKET, else TCP to the host:port in SSE_AGENT_DOCKER."""
    env = os.environ if environ is None else environ
    if url and url.startswith(UNIX):
        return Location("http://localhost", uds=url.removeprefix(UNIX))
    if url:
        return Location(url.rstrip("/"))
    if grading and env.get(ADMIN_VARIABLE):
        return Location("http://localhost", uds=env[ADMIN_VARIABLE])
    if env.get(SOCKET_VARIABLE):
        return Location("http://localhost", uds=env[SOCKET_VARIABLE])
    if tcp := env.get(TCP_VARIABLE):
        return Location((tcp if "://" in tcp else f"http://{tcp}").rstrip("/"))
    return None


def unsupported_warning(names: Sequence[str]) -> str:
    """The start-up warning for checks the daemon cannot run (third-party ones, upstream)."""
    return (
        f"the upstream daemon cannot run {', '.join(names)}: test_patch reports "
        f"{'it' if len(names) == 1 else 'them'} as not run (this daemon cannot run it)"
    )


def where_daemons_are(grading: bool) -> str:
    """How a daemon is given, for a line that says none was."""
    variables = [ADMIN_VARIABLE] * grading + [SOCKET_VARIABLE, TCP_VARIABLE]
    return (
        f"give --daemon-url URL (unix:PATH for a socket), or set {', '.join(variables[:-1])} "
        f"or {variables[-1]}"
    )


class _Unreachable(Exception):
    pass


async def _probe(client: httpx.AsyncClient, path: str, validate: Callable[[bytes], M]) -> M | None:
    """The answer when `path` answers as `validate` expects; None when something else answers."""
    try:
        response = await client.get(path, timeout=PROBE_TIMEOUT)
    except httpx.HTTPError as exc:
        raise _Unreachable(describe_error(exc)) from exc
    if response.status_code != 200:
        return None
    try:
        return validate(response.content)
    except ValidationError:
        return None


class DaemonConnection:
    """A `Daemon` that settles which API it speaks at the first answer, and sticks to it."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        blocking: httpx.Client,
        location: Location,
        api: str,
        *,
        grading: bool,
        timeouts: Timeouts | None = None,
    ) -> None:
        self.client = client
        self.blocking = blocking  # for our API's logs, read in a worker thread
        self.location = location
        self.api = "ssebench" if api == "upstream" else api
        self.grading = grading
        self.timeouts = timeouts
        self.found: Daemon | None = None
        self.description = ""
        self.problem: str | None = None  # why no daemon of the API answered the last probe
        self._lock = asyncio.Lock()
        self._warn_at_first_call = False
        if self.api == "native":
            self.found = self._native()
        elif self.api == "ssebench":
            self.found = self._upstream()

    def _native(self) -> HttpDaemon:
        return HttpDaemon(self.client, self.blocking, timeouts=self.timeouts)

    def _upstream(self) -> UpstreamDaemon:
        return UpstreamDaemon(self.client, grading=self.grading, timeouts=self.timeouts)

    async def start(self) -> str:
        """Probe once to say what answers; never raises, whatever answers or not."""
        try:
            self.description = await self._identify()
        except DaemonError as exc:
            self.description = str(exc)
        self._warn_at_first_call = self.found is None
        return self.description

    async def _identify(self) -> str:
        """Probe GET /v1/health, then GET /version; settle the API when it was 'auto'."""
        where = f"at {self.location}"
        tried = []
        self.problem = None
        try:
            if self.api != "ssebench":
                tried.append(f"GET {API_PREFIX}/health")
                health = await _probe(
                    self.client, f"{API_PREFIX}/health", Health.model_validate_json
                )
                if health is not None:
                    self.found = self.found or self._native()
                    level = "evaluator" if health.difficulty is None else health.difficulty
                    return f"the native daemon API (/v1, difficulty {level}) {where}"
            if self.api != "native":
                tried.append("GET /version")
                version = await _probe(self.client, "/version", Version.model_validate_json)
                if version is not None:
                    self.found = self.found or self._upstream()
                    return f"the upstream ssebench daemon API (version {version.version}) {where}"
            problem = f"{' and '.join(tried)} got no answer of that API"
        except _Unreachable as exc:
            problem = str(exc)
        self.problem = problem
        if self.found is not None:
            api = "native" if self.api == "native" else "upstream ssebench"
            return f"the {api} daemon API {where}, not answering yet ({problem})"
        raise DaemonError(
            f"no daemon answers {where} yet ({problem}); test_patch reports an internal "
            "testing failure until one does"
        )

    def unsupported(self, checks: Sequence[Check]) -> list[str]:
        """Names of the checks the found daemon cannot run; empty while none is found."""
        if isinstance(self.found, UpstreamDaemon):
            return [check.name for check in unsupported_checks(checks)]
        return []

    async def connect(self) -> Daemon:
        """The daemon, probing again while none was found, so one that starts late is found."""
        async with self._lock:
            if self.found is None:
                self.description = await self._identify()
                log.info("found %s", self.description)
        assert self.found is not None
        return self.found

    async def begin(self, plan: Sequence[Check]) -> dict[str, int | None]:
        daemon = await self.connect()
        if self._warn_at_first_call:
            self._warn_at_first_call = False
            names = self.unsupported(plan)
            if names:
                log.warning("%s", unsupported_warning(names))
        return await daemon.begin(plan)

    async def run_case(self, check: Check, index: int) -> CaseRun:
        return await (await self.connect()).run_case(check, index)

    async def open_log(self, case: CaseRun) -> LogSource:
        return await (await self.connect()).open_log(case)

    async def tree_changed(self) -> bool:
        return await (await self.connect()).tree_changed()


@contextlib.asynccontextmanager
async def open_daemon(
    api: str = "auto",
    url: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    grading: bool = False,
    timeouts: Timeouts | None = None,
) -> AsyncIterator[DaemonConnection]:
    """Open the daemon client `api` names ('auto', 'ssebench' or 'upstream') at `url`, or where
    SSE_DAEMON_SOCKET / SSE_AGENT_DOCKER in `environ` (default os.environ) say.

    Raises ConfigError only for a bad `api` or no location at all; a daemon that does not
    answer yet is found later. `.description` says what answered at start, for stderr.
    """
    if api not in DAEMON_APIS:
        raise ConfigError(f"--daemon-api must be one of {', '.join(DAEMON_APIS)} (got {api!r})")
    location = daemon_location(url, environ, grading=grading)
    if location is None:
        raise ConfigError(f"no daemon to talk to: {where_daemons_are(grading)}")
    # Plain HTTP needs no TLS context, and loading the CA bundle costs a tenth of a second.
    verify = location.url.startswith("https://")
    uds = location.uds
    transport = httpx.AsyncHTTPTransport(uds=uds, verify=verify) if uds else None
    sync_transport = httpx.HTTPTransport(uds=uds, verify=verify) if uds else None
    url = location.url
    async with httpx.AsyncClient(
        base_url=url, transport=transport, trust_env=False, verify=verify
    ) as client:
        with httpx.Client(
            base_url=url, transport=sync_transport, trust_env=False, verify=verify
        ) as blocking:
            connection = DaemonConnection(
                client, blocking, location, api, grading=grading, timeouts=timeouts
            )
            await connection.start()
            yield connection
