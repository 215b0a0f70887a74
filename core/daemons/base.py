"""The one HTTP path every daemon client takes: request, check the status, parse, or DaemonError.

Every fault (unreachable, timing out, a non-200 answer, malformed JSON) becomes a DaemonError
with a one-line message, which the edge turns into the spec's internal-failure text. A log's
bytes are no JSON answer: they stream through `HttpLog` (native.py), in a worker thread, with
the same errors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from pydantic import ValidationError

from ssebench.core.errors import DaemonError

M = TypeVar("M")


@dataclass(frozen=True)
class Timeouts:
    """Seconds a daemon client waits. Queries answer at once (they never wait for a run), so a
    daemon that accepted the connection but stays silent `query` seconds is broken; a run
    answers once its case finished, so it gets the case's own limit plus `run_margin`."""

    connect: float = 10.0
    query: float = 60.0
    run_margin: float = 120.0


def one_line(text: str) -> str:
    """DaemonError messages are one line; an error page or a traceback is not."""
    return " ".join(text.split())


def describe_error(exc: Exception) -> str:
    """The exception's type, and its message when it has one (a timeout's is often empty)."""
    message = one_line(str(exc))
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class HttpApi:
    """What both daemon APIs share: an httpx client, time limits, and the request path."""

    def __init__(self, client: httpx.AsyncClient, *, timeouts: Timeouts | None = None) -> None:
        self.client = client
        self.timeouts = timeouts or Timeouts()

    def timeout(self, read: float | None) -> httpx.Timeout:
        return httpx.Timeout(read, connect=self.timeouts.connect)

    async def request(
        self,
        method: str,
        path: str,
        *,
        timeout: float | None = None,
        json: dict[str, Any] | None = None,
        answers: tuple[int, ...] = (200,),
    ) -> httpx.Response:
        """The answer when its status is one of `answers` (a 200); anything else is a
        DaemonError naming the route."""
        read = self.timeouts.query if timeout is None else timeout
        try:
            response = await self.client.request(
                method, path, json=json, timeout=self.timeout(read)
            )
        except httpx.HTTPError as exc:
            raise DaemonError(f"{method} {path}: {describe_error(exc)}") from exc
        if response.status_code not in answers:
            why = self.explain(response.status_code, path)
            body = one_line(response.text[:200])
            raise DaemonError(f"{method} {path}: HTTP {response.status_code}{why}: {body}")
        return response

    def explain(self, status: int, path: str) -> str:
        """What a status of `path` means for this API, if more than its number (a subclass
        says)."""
        return ""

    async def query(
        self,
        method: str,
        path: str,
        validate: Callable[[bytes], M],
        *,
        timeout: float | None = None,
        json: dict[str, Any] | None = None,
    ) -> M:
        """Request, then parse the answer with `validate` (e.g. `Model.model_validate_json`)."""
        response = await self.request(method, path, timeout=timeout, json=json)
        return parse(response, validate)


def parse(response: httpx.Response, validate: Callable[[bytes], M]) -> M:
    """The answer's JSON as the API says it is; anything else is a DaemonError."""
    try:
        return validate(response.content)
    except ValidationError as exc:
        where = f"{response.request.method} {response.request.url.path}"
        message = one_line(exc.errors()[0]["msg"]) if exc.errors() else "invalid"
        raise DaemonError(f"{where}: malformed answer: {message}") from None
