"""Normal ends that the libraries under us report as crashes, kept quiet: a client that closes
its session while a request of it is still being handled, and a server that stops with
requests open. DESIGN.md: such ends leave one informational line at most, never a traceback.

- The MCP SDK hands a notification to its session after answering it 202; a DELETE of the
  session in between (a client that exits right after `initialize`, on a loaded machine) makes
  that hand-over raise ClosedResourceError, which the SDK logs with its traceback, then answers
  500 on the finished response (uvicorn: "Unexpected ASGI message") and raises again
  (modelcontextprotocol/python-sdk #2934's review, #2983). `quiet_when_gone` wraps the app: what
  the app sends after its answer is complete is dropped, and the closed session's error, once
  the answer is out, ends the request instead of reaching uvicorn's log.
- uvicorn cancels what still runs `timeout_graceful_shutdown` seconds after a stop (a running
  call, a client's open event stream, the embedded daemon's case) and logs each as an error
  with its traceback. `QuietStop` counts them instead, once a stop began.
"""

from __future__ import annotations

import asyncio
import logging
import sys

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("ssebench")

_GONE = (anyio.ClosedResourceError, anyio.BrokenResourceError)
# Where the MCP SDK logs a session's closed streams as errors.
_SDK_LOGGERS = (
    "mcp.server.streamable_http",
    "mcp.server.streamable_http_manager",
    "mcp.server._streamable_http_modern",
)
_UVICORN = "uvicorn.error"
_CANCELLING = "Cancel %s running task(s)"  # uvicorn's message when its grace runs out
STOPPED_OPEN = "ssebench: stopped; requests still open were closed"


def _exception(record: logging.LogRecord) -> BaseException | None:
    return record.exc_info[1] if record.exc_info else None


class _SessionGone(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not isinstance(_exception(record), _GONE)


_SESSION_GONE = _SessionGone()


def quiet_when_gone(app: ASGIApp) -> ASGIApp:
    """`app`, quiet about a session that closed while one of its requests was handled."""
    for name in _SDK_LOGGERS:
        logging.getLogger(name).addFilter(_SESSION_GONE)  # the same filter is added once

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        complete = False

        async def until_complete(message: Message) -> None:
            nonlocal complete
            if complete:
                return  # an error page after the answer: it has nowhere to go
            complete = message["type"] == "http.response.body" and not message.get("more_body")
            await send(message)

        try:
            await app(scope, receive, until_complete)
        except _GONE:
            if not complete:
                raise
            log.debug("a session closed while a request of it was handled")

    return guarded


class QuietStop(logging.Filter):
    """uvicorn's log once we stop, less what a stop is bound to cut: its count instead. It
    stays on uvicorn's logger to the process's end, since a cut request logs as it unwinds,
    after its server has returned."""

    def __init__(self) -> None:
        super().__init__()
        self.stopping = False
        self.cut = False
        logging.getLogger(_UVICORN).addFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.stopping:
            return True
        if str(record.msg).startswith(_CANCELLING):
            self.cut = True
            return False
        return not isinstance(_exception(record), asyncio.CancelledError)

    def say(self) -> None:
        """The one line a stop leaves, when it cut requests still open (a running call, whose
        case is killed, an event stream); the embedded daemon's are counted with its server's,
        so the line gives no number."""
        if self.cut:
            print(STOPPED_OPEN, file=sys.stderr, flush=True)
