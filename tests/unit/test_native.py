"""HttpDaemon: the real app in-process for what it withholds (tests/e2e/test_native.py runs
cases through it); faults from MockTransport or sockets.

Every fault is a DaemonError with a one-line message, which the edge turns into the spec's
internal-failure text.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from daemon_app import create_app

from ssebench.core.case import CaseRun
from ssebench.core.daemons.base import Timeouts
from ssebench.core.daemons.native import HttpDaemon
from ssebench.core.errors import DaemonError
from ssebench.core.logsource import read_whole
from ssebench.core.registry import build_registry
from ssebench.daemon.task import load_task
from ssebench.plugins import build, functional, intent, poc
from ssebench.plugins.build import BUILD
from ssebench.plugins.functional import FUNCTIONAL
from ssebench.plugins.intent import INTENT
from ssebench.plugins.poc import POCS
from ssebench.testing.servers import serving_app

REGISTRY = build_registry(plugins=[build, poc, intent, functional], use_entry_points=False)
BASE = "http://d"

TASK_TOML = """\
source = "src"

[checks.build]
run = '''printf 'built\\000\\377\\n'; echo warn >&2'''
timeout = 30

[checks.pocs]
cases = ["echo poc0", "echo poc1; kill -SEGV $$"]
timeout = 20

[checks.functional]
run = "exit 2"
"""


def with_app(folder: Path, level: int | None, job: Callable[[HttpDaemon], Awaitable[Any]]) -> Any:
    (folder / "src").mkdir()
    (folder / "task.toml").write_text(TASK_TOML)
    task = load_task(folder, REGISTRY.checks)
    spool = folder / "spool"
    spool.mkdir()
    app = create_app(task, REGISTRY, level, spool=spool)

    async def main(url: str) -> Any:
        async with httpx.AsyncClient(base_url=url) as client:
            with httpx.Client(base_url=url) as blocking:
                return await job(HttpDaemon(client, blocking))

    with serving_app(app, log_level="critical") as url:
        return asyncio.run(main(url))


async def collect(daemon: HttpDaemon, result: CaseRun) -> bytes:
    """The case's whole log, read as the tail rule reads it: in a worker thread."""
    source = await daemon.open_log(result)
    try:
        return await asyncio.to_thread(read_whole, source)
    finally:
        source.close()


def test_a_check_the_daemon_withholds_is_a_daemon_error(tmp_path: Path) -> None:
    async def job(daemon: HttpDaemon) -> str:
        with pytest.raises(DaemonError) as caught:
            await daemon.begin([BUILD, POCS, INTENT, FUNCTIONAL])
        return str(caught.value)

    assert with_app(tmp_path, 1, job) == (
        'POST /v1/calls: HTTP 403: {"error":"intent tests: not available at difficulty level 1"}'
    )


def test_a_withheld_case_run_directly_is_a_daemon_error(tmp_path: Path) -> None:
    async def job(daemon: HttpDaemon) -> str:
        with pytest.raises(DaemonError) as caught:
            await daemon.run_case(POCS, 0)
        return str(caught.value)

    assert with_app(tmp_path, 2, job) == (
        'POST /v1/checks/pocs/cases/0/run: HTTP 403: {"error":"PoCs: not available at '
        'difficulty level 2"}'
    )


# --- faults ------------------------------------------------------------------------------------

CHECKS_OK = {
    "call": "c1",
    "checks": [
        {"key": "build", "name": "build", "cases": 1, "timeout": 30.0},
        {"key": "pocs", "name": "PoCs", "cases": 2, "timeout": 20.0},
    ],
}
ANSWER_OK = {
    "key": "pocs",
    "index": 1,
    "passed": False,
    "exit_code": None,
    "signal": 11,
    "timed_out": False,
    "seconds": 0.25,
    "log_id": "abc",
    "log_size": 10,
}
RESULT = CaseRun(
    None, 11, False, 0.25, key="pocs", index=1, passed=False, log_id="abc", log_size=10
)


def mocked(handler: Callable[[httpx.Request], httpx.Response]) -> HttpDaemon:
    transport = httpx.MockTransport(handler)
    return HttpDaemon(
        httpx.AsyncClient(transport=transport, base_url=BASE),
        httpx.Client(transport=transport, base_url=BASE),
    )


def fault(handler: Callable[[httpx.Request], httpx.Response], call: str) -> str:
    """The one-line message of the DaemonError that `call` raises against `handler`."""

    async def main() -> str:
        daemon = mocked(handler)
        async with daemon.client:
            with pytest.raises(DaemonError) as caught:
                if call == "health":
                    await daemon.health()
                elif call == "counts":
                    await daemon.begin([BUILD, POCS])
                elif call == "run":
                    await daemon.run_case(POCS, 1)
                else:
                    await collect(daemon, RESULT)
        return str(caught.value)

    message = asyncio.run(main())
    assert "\n" not in message
    return message


def test_the_mock_answers_are_good_ones() -> None:
    """The fault tests below change one thing from answers the client accepts."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/calls":
            return httpx.Response(200, json=CHECKS_OK)
        if request.url.path == "/v1/checks/pocs/cases/1/run":
            return httpx.Response(200, json=ANSWER_OK)
        return httpx.Response(200, content=b"0123456789")

    async def main() -> list[Any]:
        daemon = mocked(handler)
        async with daemon.client:
            counts = await daemon.begin([BUILD, POCS])
            result = await daemon.run_case(POCS, 1)
            return [counts, result, await collect(daemon, result)]

    assert asyncio.run(main()) == [{"build": 1, "pocs": 2}, RESULT, b"0123456789"]


def raising(exc: Exception) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc

    return handler


def answering(
    status: int, content: bytes, headers: dict[str, str] | None = None
) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=content, headers=headers)

    return handler


@pytest.mark.parametrize(
    ("handler", "call", "message"),
    [
        (
            raising(httpx.ConnectError("[Errno 111] Connection refused")),
            "counts",
            "POST /v1/calls: ConnectError: [Errno 111] Connection refused",
        ),
        (raising(httpx.ReadTimeout("")), "run", "POST /v1/checks/pocs/cases/1/run: ReadTimeout"),
        (
            raising(httpx.ReadTimeout("timed out")),
            "log",
            "GET /v1/logs/abc: ReadTimeout: timed out",
        ),
        (
            raising(httpx.RemoteProtocolError("Server disconnected\nwithout sending a response")),
            "health",
            "GET /v1/health: RemoteProtocolError: Server disconnected without sending a response",
        ),
        (
            answering(500, b"Internal Server Error"),
            "counts",
            "POST /v1/calls: HTTP 500: Internal Server Error",
        ),
        (
            answering(502, b"<html>\n<body>\n  Bad Gateway\n</body>\n</html>\n"),
            "run",
            "POST /v1/checks/pocs/cases/1/run: HTTP 502: <html> <body> Bad Gateway </body> </html>",
        ),
        (
            answering(503, b"x" * 500),
            "counts",
            "POST /v1/calls: HTTP 503: " + "x" * 200,
        ),
        (
            answering(403, b'{"error": "PoCs: not available at difficulty level 2"}'),
            "run",
            'POST /v1/checks/pocs/cases/1/run: HTTP 403: {"error": "PoCs: not available at '
            'difficulty level 2"}',
        ),
        (answering(404, b'{"error": "no such log"}'), "log", "GET /v1/logs/abc: HTTP 404"),
        (answering(500, b"boom"), "log", "GET /v1/logs/abc: HTTP 500"),
        (
            answering(200, b"not json"),
            "counts",
            "POST /v1/calls: malformed answer: Invalid JSON: expected ident at line 1 column 2",
        ),
        (
            answering(200, b""),
            "health",
            "GET /v1/health: malformed answer: Invalid JSON: EOF while parsing a value at line 1 "
            "column 0",
        ),
        (
            answering(
                200, b'{"call": "c1", "checks": [{"key": "build", "name": "build", "cases": 1}]}'
            ),
            "counts",
            "POST /v1/calls: malformed answer: Field required",
        ),
        (
            answering(
                200,
                json.dumps(
                    {"call": "c1", "checks": [{**CHECKS_OK["checks"][0], "cases": "x"}]}
                ).encode(),
            ),
            "counts",
            "POST /v1/calls: malformed answer: Input should be a valid integer, unable to parse "
            "string as an integer",
        ),
        (
            answering(200, json.dumps({**ANSWER_OK, "passed": "perhaps"}).encode()),
            "run",
            "POST /v1/checks/pocs/cases/1/run: malformed answer: Input should be a valid boolean, "
            "unable to interpret input",
        ),
        (
            answering(200, json.dumps([ANSWER_OK]).encode()),
            "run",
            "POST /v1/checks/pocs/cases/1/run: malformed answer: Input should be an object",
        ),
        (
            answering(200, json.dumps({**ANSWER_OK, "index": 0}).encode()),
            "run",
            "POST /v1/checks/pocs/cases/1/run: answered for pocs case 0",
        ),
        (
            answering(200, json.dumps({**ANSWER_OK, "key": "build"}).encode()),
            "run",
            "POST /v1/checks/pocs/cases/1/run: answered for build case 1",
        ),
        (
            answering(200, json.dumps({"call": "c1", "checks": CHECKS_OK["checks"][:1]}).encode()),
            "counts",
            "the daemon does not offer pocs",
        ),
        (answering(200, b"01234"), "log", "GET /v1/logs/abc: got 5 of 10 bytes"),
        (answering(200, b""), "log", "GET /v1/logs/abc: got 0 of 10 bytes"),
        (answering(200, b"0123456789AB"), "log", "GET /v1/logs/abc: got 12 of 10 bytes"),
    ],
)
def test_fault_is_a_one_line_daemon_error(
    handler: Callable[[httpx.Request], httpx.Response], call: str, message: str
) -> None:
    assert fault(handler, call) == message


def test_a_log_fault_mid_stream_is_a_daemon_error() -> None:
    def broken() -> Iterator[bytes]:
        yield b"01234"
        raise httpx.ReadError("connection reset")

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=broken())

    source = asyncio.run(mocked(handler).open_log(RESULT))
    received: list[bytes] = []
    with pytest.raises(DaemonError) as caught:
        for chunk in source.chunks():
            received.append(chunk)
    assert (received, str(caught.value)) == (
        [b"01234"],
        "GET /v1/logs/abc: ReadError: connection reset",
    )


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (200, b"0123456789", "GET /v1/logs/abc bytes=2-4: HTTP 200"),  # a Range ignored
        (206, b"23", "GET /v1/logs/abc bytes=2-4: got 2 bytes"),
        (416, b"", "GET /v1/logs/abc bytes=2-4: HTTP 416"),
    ],
)
def test_a_part_not_as_asked_is_a_daemon_error(status: int, body: bytes, message: str) -> None:
    asked: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.headers.get("range"))
        return httpx.Response(status, content=body)

    source = asyncio.run(mocked(handler).open_log(RESULT))
    with pytest.raises(DaemonError) as caught:
        source.read(2, 3)
    assert (asked, str(caught.value)) == (["bytes=2-4"], message)


# --- faults over real sockets ------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def real(port: int, call: str, timeouts: Timeouts | None = None) -> str:
    async def main() -> str:
        client = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}")
        blocking = httpx.Client(base_url=f"http://127.0.0.1:{port}")
        daemon = HttpDaemon(client, blocking, timeouts=timeouts)
        async with daemon.client:
            with pytest.raises(DaemonError) as caught:
                if call == "counts":
                    await daemon.begin([BUILD])
                else:
                    await collect(daemon, RESULT)
        return str(caught.value)

    return asyncio.run(main())


def test_connection_refused_on_a_closed_port() -> None:
    assert real(_closed_port(), "counts") == (
        "POST /v1/calls: ConnectError: All connection attempts failed"
    )


@pytest.fixture
def raw_server() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server that answers each connection with the next canned bytes, then closes.

    An answer of b"" means: read the request and say nothing until the test ends.
    """
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.05)  # so the loop sees `stop` soon
    answers: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            with conn:
                conn.recv(65536)
                answer = answers.pop(0) if answers else b""
                if answer:
                    conn.sendall(answer)
                else:
                    stop.wait(10)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], answers
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def test_a_log_cut_short_by_the_server(raw_server: tuple[int, list[bytes]]) -> None:
    port, answers = raw_server
    answers.append(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234")
    assert real(port, "log") == (
        "GET /v1/logs/abc: RemoteProtocolError: peer closed connection without sending "
        "complete message body (received 5 bytes, expected 10)"
    )


def test_a_silent_daemon_is_a_read_timeout(raw_server: tuple[int, list[bytes]]) -> None:
    port, _ = raw_server
    assert real(port, "counts", Timeouts(query=0.3)) == "POST /v1/calls: ReadTimeout"


def test_queries_have_a_time_limit_by_default() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(dict(request.extensions["timeout"]))
        return httpx.Response(200, json=CHECKS_OK)

    async def main() -> None:
        daemon = mocked(handler)
        async with daemon.client:
            await daemon.begin([BUILD])

    asyncio.run(main())
    assert seen == [{"connect": 10.0, "read": 60.0, "write": 60.0, "pool": 60.0}]


def test_a_run_waits_the_checks_time_limit_plus_the_margin() -> None:
    seen: list[float | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/calls":
            return httpx.Response(200, json=CHECKS_OK)
        seen.append(request.extensions["timeout"]["read"])
        return httpx.Response(200, json=ANSWER_OK)

    async def main() -> None:
        daemon = mocked(handler)
        async with daemon.client:
            await daemon.run_case(POCS, 1)  # before the list: the default limit
            await daemon.begin([BUILD, POCS])
            await daemon.run_case(POCS, 1)

    asyncio.run(main())
    assert seen == [3600.0 + 120.0, 20.0 + 120.0]


def test_a_log_sent_compressed_counts_its_own_bytes() -> None:
    log = b"line\n" * 1000

    def stream() -> Iterator[bytes]:
        yield gzip.compress(log)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=stream(), headers={"Content-Encoding": "gzip"})

    async def main() -> bytes:
        daemon = mocked(handler)
        async with daemon.client:
            return await collect(
                daemon,
                CaseRun(0, None, False, 0.1, index=0, passed=True, log_id="z", log_size=len(log)),
            )

    assert asyncio.run(main()) == log
