"""The upstream client: through the upstream daemon, test_patch says what it says on ours.

Each command prints to stdout before stderr (or to one of them), so our daemon's interleaved
log and the upstream client's stdout-then-stderr join are the same bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from daemon_app import create_app
from upstream_standin import Standin, StandinTask, create_standin

from ssebench.core import Check, hookimpl
from ssebench.core.daemons.connect import Location, daemon_location, open_daemon
from ssebench.core.daemons.native import HttpDaemon
from ssebench.core.daemons.upstream import UpstreamDaemon
from ssebench.core.errors import ConfigError, DaemonError
from ssebench.core.logsource import read_whole
from ssebench.core.orchestrator import run_checks, run_test_patch
from ssebench.core.registry import build_registry
from ssebench.core.report import INTERNAL_FAILURE
from ssebench.daemon.task import load_task
from ssebench.testing import TaskHandle
from ssebench.testing.servers import free_port, serving_app

POC_RUN = "bash {poc}"
FIXED = "echo 'decoded 12 bytes'; exit 0"
TRIGGERS = (
    "echo 'decoding'; echo '==42==ERROR: AddressSanitizer: heap-buffer-overflow' >&2; "
    "echo 'SUMMARY: AddressSanitizer: heap-buffer-overflow rle.c:41' >&2; exit 1"
)


@dataclass(frozen=True)
class Spec:
    build: str | None = "echo 'cc -c rle.c'; echo 'cc -o rle rle.o'"
    pocs: tuple[str, ...] = (FIXED, FIXED)
    intent: str | None = "echo 'intent: 3 passed'"
    functional: str | None = "echo 'ok 1 - roundtrip'; echo 'ok 2 - empty'"


PASSING = Spec()
OUTCOMES = {
    "passing": PASSING,
    "build fails": replace(
        PASSING, build="echo 'cc -c rle.c'; echo 'rle.c:41: error: expected ;' >&2; exit 2"
    ),
    "a PoC still triggers": replace(PASSING, pocs=(FIXED, TRIGGERS, FIXED)),
    "functional fails": replace(PASSING, functional="echo 'not ok 2 - empty'; exit 1"),
    "intent fails": replace(PASSING, intent="echo 'FAIL: test_bounds' >&2; exit 1"),
    "PoC and functional fail": replace(
        PASSING, pocs=(TRIGGERS,), functional="echo 'not ok 1' >&2; exit 3"
    ),
}


class LintPlugin:
    """A third-party check: no upstream action runs it."""

    @staticmethod
    @hookimpl
    def ssebench_checks() -> list[Check]:
        return [Check(name="lint", key="lint", order=35, max_level=2, precedence=5)]


@pytest.fixture
def make_pair(
    ssebench_task: Callable[..., TaskHandle], tmp_path: Path
) -> Callable[..., tuple[TaskHandle, StandinTask]]:
    """One task twice: for our daemon (task.toml) and for the stand-in, with the same commands."""

    def make(spec: Spec, **kwargs: Any) -> tuple[TaskHandle, StandinTask]:
        folder = Path(tempfile.mkdtemp(dir=tmp_path, prefix="pocs"))
        paths = [folder / f"crash-{i}.sh" for i in range(len(spec.pocs))]
        for path, script in zip(paths, spec.pocs, strict=True):
            path.write_text(script + "\n")
        standin = StandinTask(tmp_path, spec.build, [str(p) for p in paths], POC_RUN)
        standin.function_test, standin.intent_test = spec.functional, spec.intent
        tables = {"build": spec.build, "intent": spec.intent, "functional": spec.functional}
        task = ssebench_task(
            {k: v for k, v in tables.items() if v is not None}
            | ({"pocs": [standin.poc_run(p) for p in standin.pocs]} if paths else {}),
            **kwargs,
        )
        standin.source = task.source
        return task, standin

    return make


@pytest.fixture(params=["tcp", "uds"])
def serve_standin(request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """Start the stand-in over TCP (SSE_AGENT_DOCKER) or a Unix socket (SSE_DAEMON_SOCKET)."""
    with contextlib.ExitStack() as stack:

        def start(task: StandinTask, level: int) -> tuple[Standin, dict[str, str]]:
            app = create_standin(task, level)
            if request.param == "uds":
                folder = tempfile.mkdtemp(prefix="sse-", dir="/tmp")  # socket paths are short
                stack.callback(shutil.rmtree, folder, ignore_errors=True)
                stack.enter_context(serving_app(app, uds=f"{folder}/daemon.sock"))
                return app.state.standin, {"SSE_DAEMON_SOCKET": f"{folder}/daemon.sock"}
            where = stack.enter_context(serving_app(app))
            return app.state.standin, {"SSE_AGENT_DOCKER": where.removeprefix("http://")}

        yield start


def report(
    task: TaskHandle, level: int, *, api: str = "auto", url: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:  # fmt: skip
    """test_patch's text through `open_daemon`, as `task.report(level)` is on our daemon."""

    async def run() -> str:
        async with open_daemon(api, url, environ=environ or {}) as daemon:
            return await run_test_patch(task.registry.checks, level, daemon, task.log_dir)

    return asyncio.run(run())


@pytest.mark.parametrize(
    ("serve_standin", "outcome"),
    [
        *(("tcp", outcome) for outcome in OUTCOMES),
        ("uds", "passing"),
        ("uds", "PoC and functional fail"),
    ],
    indirect=["serve_standin"],
)
def test_every_level_reports_as_our_daemon(outcome: str, make_pair: Any, serve_standin: Any):
    task, standin_task = make_pair(OUTCOMES[outcome])
    standin, environ = serve_standin(standin_task, 0)
    for level in range(5):
        standin.level = level
        assert report(task, level, environ=environ) == task.report(level), f"level {level}"
    assert standin.most_running == 1


def test_order_across_stdout_and_stderr_is_lost(make_pair: Any, serve_standin: Any) -> None:
    spec = replace(PASSING, build="echo 'first, on stderr' >&2; echo 'then stdout'; exit 1")
    task, standin_task = make_pair(spec)
    _, environ = serve_standin(standin_task, 2)
    text = report(task, 2, environ=environ)
    assert text.endswith("Full log (build):\nthen stdout\nfirst, on stderr")
    assert task.report(2).endswith("Full log (build):\nfirst, on stderr\nthen stdout")


def test_long_log_is_cut_and_saved_as_on_our_daemon(make_pair: Any, tmp_path: Path) -> None:
    spec = replace(PASSING, functional="seq 1 12000 | tr '\\n' ' '; echo; seq 1 150; exit 1")
    task, standin_task = make_pair(spec)
    with serving_app(create_standin(standin_task, 2)) as url:
        ours, theirs = task.report(2), report(task, 2, url=url)
    saved = re.compile(r"Full log available at (\S+)$")
    paths = [Path(saved.search(text)[1]) for text in (ours, theirs)]  # type: ignore[index]
    assert saved.sub("", ours) == saved.sub("", theirs)
    assert paths[0].read_bytes() == paths[1].read_bytes()


def test_auto_detection_picks_the_api_that_answers(make_pair: Any) -> None:
    task, standin_task = make_pair(OUTCOMES["a PoC still triggers"])
    ours = create_app(load_task(task.path, task.registry.checks), task.registry, 1)

    async def detect(url: str) -> tuple[object, str, str]:
        async with open_daemon("auto", url, environ={}) as daemon:
            text = await run_test_patch(task.registry.checks, 1, daemon, task.log_dir)
            return daemon.found, daemon.description, text

    with serving_app(ours) as our_url, serving_app(create_standin(standin_task, 1)) as their_url:
        found, said, text = asyncio.run(detect(our_url))
        assert isinstance(found, HttpDaemon) and text == task.report(1)
        assert said == f"the native daemon API (/v1, difficulty 1) at {our_url}"
        found, said, text = asyncio.run(detect(their_url))
        assert isinstance(found, UpstreamDaemon) and text == task.report(1)
        assert said == f"the upstream ssebench daemon API (version 1) at {their_url}"


@pytest.mark.parametrize("api", ["auto", "ssebench", "upstream", "native"])
def test_a_daemon_that_starts_late_is_found(api: str, make_pair: Any, caplog: Any) -> None:
    task, standin_task = make_pair(PASSING)
    url = f"http://127.0.0.1:{free_port()}"
    app = create_standin(standin_task, 2)
    if api == "native":
        app = create_app(load_task(task.path, task.registry.checks), task.registry, 2)

    async def scenario() -> tuple[str, str, str]:
        async with open_daemon(api, url, environ={}) as daemon:
            said = daemon.description
            before = await run_test_patch(task.registry.checks, 2, daemon, task.log_dir)
            with serving_app(app, port=int(url.rsplit(":", 1)[1])):
                after = await run_test_patch(task.registry.checks, 2, daemon, task.log_dir)
            return said, before, after

    caplog.set_level(logging.INFO, "ssebench")
    said, before, after = asyncio.run(scenario())
    if api == "auto":
        assert said.startswith(f"no daemon answers at {url} yet (ConnectError")
    else:
        named = "native" if api == "native" else "upstream ssebench"
        assert said.startswith(f"the {named} daemon API at {url}, not answering yet (ConnectError")
    assert before == INTERNAL_FAILURE
    assert after == task.report(2)
    assert "internal testing failure" in caplog.text


def test_third_party_check_is_not_run_and_warned_about_once(make_pair: Any, caplog: Any) -> None:
    task, standin_task = make_pair(PASSING, plugins=[LintPlugin])
    checks, port = task.registry.checks, free_port()
    app = create_standin(standin_task, 0)

    async def scenario() -> tuple[list[str], list[str], list[str]]:
        async with open_daemon("auto", f"http://127.0.0.1:{port}", environ={}) as daemon:
            before = daemon.unsupported(checks)  # not known until a daemon answers
            with serving_app(app, port=port):
                texts = []
                for level in (0, 2):
                    app.state.standin.level = level
                    texts.append(await run_test_patch(checks, level, daemon, task.log_dir))
            return before, daemon.unsupported(checks), texts

    caplog.set_level(logging.INFO, "ssebench")
    before, after, (level0, level2) = asyncio.run(scenario())
    assert (before, after) == ([], ["lint"])
    assert caplog.text.count("the upstream daemon cannot run lint: test_patch reports it") == 1
    assert level0 == (
        "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n"
        "- PoCs: passed (2 of 2)\n- intent tests: passed\n"
        "- lint: not run (this daemon cannot run it)\n"
        "- functional tests: passed (covered by the intent tests)"
    )
    assert level2 == (
        "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n"
        "- lint: not run (this daemon cannot run it)\n- functional tests: passed\n\n"
        "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is "
        "reported about them. Without the PoCs, this result does not show whether the "
        "vulnerability is fixed."
    )


@pytest.mark.parametrize(
    ("ours", "theirs", "build", "cause"),
    [
        (1, 2, "echo built", "HTTP 403 (the daemon's level withholds it: its level and ours"),
        (0, 0, None, "code -1, no build for the PoC to run against"),
    ],
    ids=["the levels disagree", "a PoC before any build"],
)
def test_internal_failures(
    ours: int, theirs: int, build: Any, cause: str, make_pair: Any, caplog: Any
) -> None:
    task, standin_task = make_pair(replace(PASSING, build=build))
    with serving_app(create_standin(standin_task, theirs)) as url:
        assert report(task, ours, url=url, api="ssebench") == INTERNAL_FAILURE
    assert cause in caplog.text


def test_grading_sends_the_flag_and_passes_the_gate(make_pair: Any) -> None:
    task, standin_task = make_pair(PASSING)
    app = create_standin(standin_task, 4)

    async def grade(grading: bool) -> Any:
        async with open_daemon("ssebench", url, environ={}, grading=grading) as daemon:
            return await run_checks(task.registry.checks, None, daemon, coverage=False)

    with serving_app(app) as url:
        outcome = asyncio.run(grade(True))
        assert outcome.all_passed and len(outcome.outcomes) == 4
        assert [action for action, _ in app.state.standin.bodies] == [
            "build", "run_poc", "run_poc", "intent_test", "function_test"
        ]  # fmt: skip
        assert all(body.get("grading") is True for _, body in app.state.standin.bodies)
        assert app.state.standin.bodies[1][1]["poc"] == standin_task.pocs[0]
        assert report(task, 0, url=url) == INTERNAL_FAILURE  # no flag: the gate holds


def test_the_standin_answers_as_the_description_says(make_pair: Any) -> None:
    _, standin_task = make_pair(replace(PASSING, functional=None))
    standin_task.build = "sleep 0.2; echo built"
    app = create_standin(standin_task, 1)

    async def calls(url: str) -> list[tuple[int, Any]]:
        async with httpx.AsyncClient(base_url=url) as client:

            def post(action: str, body: dict[str, Any]) -> Any:
                return client.post(f"/tool/bencher?action={action}", json=body)

            poc = {"poc": standin_task.pocs[0]}
            before = await post("run_poc", poc)
            answers = [before, await post("intent_test", {"grading": False})]
            answers += [await post("lint", {}), await post("function_test", {"grading": False})]
            answers += await asyncio.gather(post("build", {}), post("build", {}))
            answers.append(await post("run_poc", poc))
            return [(a.status_code, a.json()) for a in answers]

    with serving_app(app) as url:
        answers = asyncio.run(calls(url))
    assert answers[0] == (200, {"code": -1, "stdout": "", "stderr": "nothing is built yet"})
    assert [status for status, _ in answers[1:4]] == [403, 500, 500]
    assert all(set(body) == {"error"} for _, body in answers[1:4])
    assert answers[4:] == [(200, {"code": 0, "stdout": "built\n", "stderr": ""})] * 2 + [
        (200, {"code": 0, "stdout": "decoded 12 bytes\n", "stderr": ""})
    ]
    assert app.state.standin.most_running == 1


def _faulty(routes: dict[str, Any]) -> UpstreamDaemon:
    def answer(request: httpx.Request) -> httpx.Response:
        found = routes.get(request.url.path, (404, {"error": "no"}))
        return httpx.Response(found[0], **{"json" if found[1] is not None else "text": found[1]})

    transport = httpx.MockTransport(answer)
    return UpstreamDaemon(httpx.AsyncClient(transport=transport, base_url="http://daemon"))


CAPS = {"can_build": True, "can_run_poc": True, "poc_count": 2}
CAPS |= {"has_function_test": True, "has_intent_test": False}


@pytest.mark.parametrize(
    "routes",
    [
        {"/capabilities": (200, "not json")},
        {"/capabilities": (200, {**CAPS, "poc_count": "many"})},
        {"/capabilities": (200, CAPS), "/project": (200, {"poc": ["/p/1"]})},
        {
            "/capabilities": (200, {**CAPS, "can_run_poc": False}),
            "/project": (200, {"poc": ["/p/1", "/p/2"]}),
        },
        {"/capabilities": (500, {"error": "boom"})},
    ],
)
def test_a_malformed_or_failed_answer_is_a_daemon_error(routes: dict[str, Any]) -> None:
    daemon = _faulty(routes)
    checks = list(build_registry().checks)
    with pytest.raises(DaemonError):
        asyncio.run(daemon.begin(checks))


def test_counts_and_logs_of_the_current_run_only() -> None:
    routes = {"/capabilities": (200, CAPS), "/project": (200, {"poc": ["/p/1", "/p/2"]})}
    routes["/tool/bencher"] = (200, {"code": 0, "stdout": "out\n", "stderr": "é\n", "x": 1})
    daemon = _faulty(routes)
    registry = build_registry(plugins=[LintPlugin])
    checks = list(registry.checks)

    async def run() -> tuple[dict[str, int | None], bytes, Any]:
        counts = await daemon.begin(checks)
        first = await daemon.run_case(checks[0], 0)
        text = read_whole(await daemon.open_log(first))
        await daemon.begin(checks)
        return counts, text, first

    counts, text, first = asyncio.run(run())
    assert counts == {"build": 1, "pocs": 2, "intent": 0, "lint": None, "functional": 1}
    assert text == "out\né\n".encode() and first.log_size == len(text) and first.passed
    with pytest.raises(DaemonError, match="only the current run's logs"):
        asyncio.run(daemon.open_log(first))


def test_where_the_daemon_is() -> None:
    env = {"SSE_DAEMON_SOCKET": "/run/d.sock", "SSE_AGENT_DOCKER": "daemon:8080"}
    assert daemon_location("http://h:1/", env) == Location("http://h:1")
    assert daemon_location(None, env) == Location("http://localhost", uds="/run/d.sock")
    assert daemon_location(None, {"SSE_AGENT_DOCKER": "daemon:8080"}) == Location(
        "http://daemon:8080"
    )
    assert daemon_location(None, {"SSE_DAEMON_SOCKET": ""}) is None

    async def open_explicitly(api: str, url: str | None) -> list[str]:
        async with open_daemon(api, url, environ={}) as daemon:
            return daemon.unsupported(build_registry(plugins=[LintPlugin]).checks)

    for api in ("ssebench", "upstream"):
        url = f"http://127.0.0.1:{free_port()}"
        assert asyncio.run(open_explicitly(api, url)) == ["lint"]
    assert asyncio.run(open_explicitly("native", f"http://127.0.0.1:{free_port()}")) == []
    for api, url in [("auto", None), ("v2", "http://h:1")]:
        with pytest.raises(ConfigError):
            asyncio.run(open_explicitly(api, url))
