"""The upstream daemon's published contract (openapi.yaml, its handlers, its SDK and MCP server),
held by the stand-in and followed by our client: hidden tests that do not apply are intent
tests that failed (the functional tests then run); `code: -1`, any process ended without an
exit status, is a PoC that still triggers; only the admin socket grades (`POST
/prepare_grading`, then `grading: true`), and a 403 is explained by what refused it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from upstream_standin import Listeners, serving_standin

from ssebench.core.check import Outcome
from ssebench.core.daemons.connect import Location, daemon_location, open_daemon
from ssebench.core.daemons.upstream import AGENT_FACING, WITHHELD, UpstreamDaemon
from ssebench.core.errors import ConfigError, DaemonError, PatchError
from ssebench.core.logsource import read_whole
from ssebench.core.orchestrator import run_checks
from ssebench.core.registry import build_registry
from ssebench.core.report import INTERNAL_FAILURE

from . import test_upstream
from .test_upstream import PASSING, LintPlugin, report

make_pair = test_upstream.make_pair  # the fixture: one task for our daemon and the stand-in

Make = Callable[..., Any]
HIDDEN_TESTS = "--- a/tests.txt\n+++ b/tests.txt\n@@ -1 +1,2 @@\n roundtrip\n+bounds\n"
NOT_BUILT = "project hasn't been built yet - call 'build' action first"
POC_REASON = (
    "test_patch result: FAILED. At least one proof-of-concept (PoC) still triggers the "
    "vulnerability. Please reassess your patch and make sure it fixes the root cause of the "
    "vulnerability."
)
INTENT_REASON = (
    "test_patch result: FAILED. One or more intent test(s) failed. These tests validate "
    "behavior after the vulnerability fix. Please reassess your patch to ensure it correctly "
    "addresses the vulnerability and aligns with common patterns in the project."
)
NO_INTENT = (
    "Not available at difficulty level 1 (NO_INTENT_TEST): intent tests. Nothing is reported "
    "about them."
)


def _grade(url: str, checks: Any) -> Outcome:
    async def run() -> Outcome:
        async with open_daemon("upstream", url, environ={}, grading=True) as daemon:
            return await run_checks(checks, None, daemon, coverage=False)

    return asyncio.run(run())


def test_hidden_tests_that_do_not_apply_fail_the_intent_tests_and_the_functional_tests_run(
    make_pair: Make,
) -> None:
    task, standin_task = make_pair(PASSING)
    standin_task.hidden_tests = HIDDEN_TESTS  # the tree has no tests.txt: it cannot apply
    with serving_standin(standin_task, 0) as at:
        text = report(task, 0, url=f"unix:{at.socket}")
    assert text == (
        f"{INTENT_REASON}\n\nChecks:\n- build: passed\n- PoCs: passed (2 of 2)\n"
        "- intent tests: FAILED\n"
        "- functional tests: passed\n\nFull log (intent tests):\n\n\n"
        "git apply failed, , error: tests.txt: No such file or directory"
    )
    assert [action for action, _, _ in at.standin.bodies][-2:] == ["intent_test", "function_test"]


def test_a_poc_ended_by_a_signal_still_triggers(make_pair: Make) -> None:
    """run.sh `exec`s the target, which a signal ends: the daemon's -1, upstream's 'still
    triggers' (our daemon says so too: a fatal signal)."""
    task, standin_task = make_pair(PASSING)
    killed = Path(standin_task.pocs[1])
    killed.write_text("echo decoding; kill -SEGV $$\n")
    with serving_standin(standin_task, 1) as at:
        text = report(task, 1, url=f"unix:{at.socket}")
    assert text == (
        f"{POC_REASON}\n\nChecks:\n- build: passed\n"
        "- PoCs: FAILED (passed 1 of 2; stopped at the first that still triggers the bug)\n"
        f"- functional tests: passed\n\n{NO_INTENT}\n\nFull log (PoCs):\ndecoding"
    )


def test_a_poc_before_any_build_still_triggers(make_pair: Make) -> None:
    task, standin_task = make_pair(replace(PASSING, build=None))
    with serving_standin(standin_task, 1) as at:
        text = report(task, 1, url=f"unix:{at.socket}")
    assert text == (
        f"{POC_REASON}\n\nChecks:\n- build: passed (the task has none)\n"
        "- PoCs: FAILED (passed 0 of 2; stopped at the first that still triggers the bug)\n"
        f"- functional tests: passed\n\n{NO_INTENT}\n\nFull log (PoCs):\n\n\n{NOT_BUILT}"
    )


def test_a_listener_that_withholds_the_action_is_an_internal_failure(
    make_pair: Make, caplog: Any
) -> None:
    """Our level rules run first: a 403 means the daemon's level is stricter than ours, or the
    agent's phase has ended. Either way nothing was tested."""
    task, standin_task = make_pair(PASSING)
    with serving_standin(standin_task, 2) as at:
        assert report(task, 1, url=f"unix:{at.socket}") == INTERNAL_FAILURE
        assert f"HTTP 403{WITHHELD}: " in caplog.text
        caplog.clear()
        at.standin.level = 1
        assert report(task, 1, url=f"http://{at.tcp}") != INTERNAL_FAILURE
        asyncio.run(_post(at, "/admin/agent_exited"))
        assert report(task, 1, url=f"http://{at.tcp}") == INTERNAL_FAILURE
        assert "tools are not available after the agent phase" in caplog.text


async def _post(at: Listeners, path: str) -> httpx.Response:
    transport = httpx.AsyncHTTPTransport(uds=at.admin)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        return await client.post(path, json={})


def test_grading_goes_through_the_admin_socket(make_pair: Make) -> None:
    task, standin_task = make_pair(PASSING, plugins=[LintPlugin])
    checks = build_registry().checks
    with serving_standin(standin_task, 4) as at:  # level 4: the agent may run nothing
        (task.source / "rle.c").write_text("fixed\n")  # the agent's change
        outcome = _grade(f"unix:{at.admin}", checks)
        bodies = list(at.standin.bodies)
        assert at.standin.repo is not None and (at.standin.repo / "rle.c").read_text() == "fixed\n"
        for url in (f"unix:{at.socket}", f"http://{at.tcp}"):
            with pytest.raises(DaemonError, match=r"POST /prepare_grading: HTTP 403") as caught:
                _grade(url, checks)
            assert AGENT_FACING in str(caught.value)
    assert outcome.all_passed and len(outcome.outcomes) == 4
    assert bodies == [
        ("build", {"grading": True}, True),
        ("run_poc", {"poc": standin_task.pocs[0]}, True),
        ("run_poc", {"poc": standin_task.pocs[1]}, True),
        ("intent_test", {"grading": True}, True),
        ("function_test", {"grading": True}, True),
    ]


def test_a_diff_that_does_not_apply_to_the_graded_copy_is_the_verdict(make_pair: Make) -> None:
    task, standin_task = make_pair(PASSING)
    (task.source / "rle.c").write_text("bug\n")
    with serving_standin(standin_task, 4) as at:
        (task.source / "rle.c").write_text("fixed\n")
        at.standin.drift = {"rle.c": "not the tree the agent started from\n"}
        with pytest.raises(PatchError, match=r"^git apply failed, "):
            _grade(f"unix:{at.admin}", build_registry().checks)
    assert at.standin.bodies == []  # no check ran


def test_the_standin_answers_as_the_contract_says(make_pair: Make) -> None:
    _, standin_task = make_pair(replace(PASSING, functional=None))
    standin_task.build = "sleep 0.2; echo built"
    with serving_standin(standin_task, 1) as at:
        answers = asyncio.run(_calls(at, standin_task.pocs[0]))
        assert at.standin.most_running == 1
    assert answers == [
        (200, {"code": -1, "stdout": "", "stderr": NOT_BUILT}),
        (403, {"error": "action 'intent_test' is not available at the current difficulty level"}),
        (403, {"error": "grading is only available on the admin socket"}),
        (500, {"error": "invalid action: lint"}),
        (500, {"error": "function_test not configured"}),
        (400, "Query deserialize error or Json deserialize error"),
        (400, "Query deserialize error or Json deserialize error"),
        (200, {"code": 0, "stdout": "built\n", "stderr": ""}),
        (200, {"code": 0, "stdout": "built\n", "stderr": ""}),
        (200, {"code": 0, "stdout": "decoded 12 bytes\n", "stderr": ""}),
        (200, {"code": -1, "stdout": "", "stderr": ""}),  # killed by a signal
        (403, {"error": "endpoint is only available on the admin socket"}),
        (403, {"error": "endpoint is only available on the admin socket"}),
        (200, {"diff": ""}),
    ]


async def _calls(at: Listeners, poc: str) -> list[tuple[int, Any]]:
    agent = httpx.AsyncClient(base_url=f"http://{at.tcp}")
    admin = httpx.AsyncClient(
        transport=httpx.AsyncHTTPTransport(uds=at.admin), base_url="http://localhost"
    )
    async with agent, admin:

        def post(action: str, body: Any, client: httpx.AsyncClient = agent) -> Any:
            return client.post(f"/tool/bencher?action={action}", json=body)

        answers = [await post("run_poc", {"poc": poc})]
        answers.append(await post("intent_test", {"grading": False}))
        answers.append(await post("build", {"grading": True}))
        answers += [await post("lint", {}), await post("function_test", {"grading": False})]
        answers.append(await agent.post("/tool/bencher", json={}))
        answers.append(await agent.post("/tool/bencher?action=build", content=b"{"))
        answers += await asyncio.gather(post("build", {}), post("build", {}))
        answers.append(await post("run_poc", {"poc": poc}))
        at.standin.task.poc_command = "kill -KILL $$"
        answers.append(await post("run_poc", {"poc": poc}, admin))
        answers.append(await agent.post("/prepare_grading", json={}))
        answers.append(await agent.get("/reference/patch"))
        answers.append(await admin.get("/reference/patch"))
    return [(a.status_code, a.json() if a.status_code != 400 else a.text) for a in answers]


def _faulty(routes: dict[str, Any], *, grading: bool = False) -> UpstreamDaemon:
    def answer(request: httpx.Request) -> httpx.Response:
        found = routes.get(request.url.path, (404, {"error": "no"}))
        return httpx.Response(found[0], **{"json" if found[1] is not None else "text": found[1]})

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer), base_url="http://daemon")
    return UpstreamDaemon(client, grading=grading)


CAPS = {"can_build": True, "can_run_poc": True, "poc_count": 2}
CAPS |= {"has_function_test": True, "has_intent_test": True}
PROJECT = {"poc": ["/p/1", "/p/2"]}


@pytest.mark.parametrize(
    ("routes", "grading"),
    [
        ({"/capabilities": (200, "not json")}, False),
        ({"/capabilities": (200, {**CAPS, "poc_count": "many"})}, False),
        ({"/capabilities": (200, CAPS), "/project": (200, {"poc": ["/p/1"]})}, False),
        ({"/capabilities": (200, {**CAPS, "can_run_poc": False}), "/project": (200, PROJECT)},
         False),
        ({"/capabilities": (500, {"error": "boom"})}, False),
        ({"/prepare_grading": (500, {"error": "git status failed: boom"})}, True),
        ({"/prepare_grading": (500, "not json")}, True),
    ],
)  # fmt: skip
def test_a_malformed_or_failed_answer_is_a_daemon_error(routes: Any, grading: bool) -> None:
    daemon = _faulty(routes, grading=grading)
    with pytest.raises(DaemonError):
        asyncio.run(daemon.begin(list(build_registry().checks)))


@pytest.mark.parametrize(
    ("answer", "code", "log"),
    [
        ((200, {"code": -1, "stdout": "", "stderr": "", "x": 1}), -1, b"\n\n"),
        ((500, {"error": "git apply failed, , error: x"}), 1, b"\n\ngit apply failed, , error: x"),
    ],
)
def test_each_answer_as_a_case(answer: Any, code: int, log: bytes) -> None:
    routes = {"/capabilities": (200, CAPS), "/project": (200, PROJECT), "/tool/bencher": answer}
    daemon = _faulty(routes)
    intent = build_registry().by_key("intent")
    assert intent is not None
    case = asyncio.run(daemon.run_case(intent, 0))
    assert (case.exit_code, case.passed, read_whole(asyncio.run(daemon.open_log(case)))) == (
        code, False, log,
    )  # fmt: skip
    with pytest.raises(DaemonError, match="HTTP 500: boom"):
        asyncio.run(_faulty({**routes, "/tool/bencher": (500, {"error": "boom"})}).run_case(
            intent, 0))  # fmt: skip


def test_where_the_daemon_is() -> None:
    env = {"SSE_DAEMON_SOCKET": "/run/d.sock", "SSE_AGENT_DOCKER": "daemon:8080"}
    admin = {**env, "SSE_ADMIN_SOCKET": "/archive/admin.sock"}
    assert daemon_location("http://h:1/", admin) == Location("http://h:1")
    assert daemon_location("unix:/run/a.sock", admin) == Location("http://localhost", "/run/a.sock")
    assert daemon_location(None, admin) == Location("http://localhost", uds="/run/d.sock")
    assert daemon_location(None, admin, grading=True) == Location(
        "http://localhost", uds="/archive/admin.sock"
    )
    assert daemon_location(None, {"SSE_AGENT_DOCKER": "daemon:8080"}) == Location(
        "http://daemon:8080"
    )
    assert daemon_location(None, {"SSE_DAEMON_SOCKET": ""}) is None
    with pytest.raises(ConfigError, match="SSE_ADMIN_SOCKET, SSE_DAEMON_SOCKET or SSE_AGENT"):
        asyncio.run(_open("upstream", None, grading=True))
    for api, url in [("auto", None), ("v2", "http://h:1")]:
        with pytest.raises(ConfigError):
            asyncio.run(_open(api, url))


async def _open(api: str, url: str | None, *, grading: bool = False) -> None:
    async with open_daemon(api, url, environ={}, grading=grading):
        pass


def test_the_checks_upstream_cannot_run() -> None:
    checks = build_registry(plugins=[LintPlugin]).checks

    async def unsupported(api: str) -> list[str]:
        async with open_daemon(api, "http://127.0.0.1:9", environ={}) as daemon:
            return daemon.unsupported(checks)

    assert asyncio.run(unsupported("upstream")) == ["lint"]
    assert asyncio.run(unsupported("native")) == []
