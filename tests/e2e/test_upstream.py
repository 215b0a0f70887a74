"""The upstream client: through the upstream daemon (a stand-in written to its published
contract), test_patch says what it says on ours, but for the log, which is joined as upstream's
own MCP server shows it: `f"{stdout}\\n\\n{stderr}"` (order across the two streams is lost).

Each command prints its stdout, then its stderr, so our daemon's interleaved log is their
concatenation, and the upstream report is ours with that log joined upstream's way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import shlex
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from daemon_app import create_app
from upstream_standin import Standin, StandinTask, create_standin

from ssebench.core import Check, hookimpl
from ssebench.core.daemons.connect import open_daemon
from ssebench.core.daemons.native import HttpDaemon
from ssebench.core.daemons.upstream import UpstreamDaemon
from ssebench.core.orchestrator import run_test_patch
from ssebench.core.report import INTERNAL_FAILURE
from ssebench.daemon.task import load_task
from ssebench.testing import TaskHandle
from ssebench.testing.servers import free_port, serving_app

POC_RUN = "bash {poc}"


@dataclass(frozen=True)
class Cmd:
    """A command that prints `out`, then `err` on stderr, and exits with `code`."""

    out: str = ""
    err: str = ""
    code: int = 0

    @property
    def shell(self) -> str:
        return f"printf %s {shlex.quote(self.out)}; printf %s {shlex.quote(self.err)} >&2; " + (
            f"exit {self.code}"
        )

    @property
    def ours(self) -> str:
        return (self.out + self.err).rstrip("\n")

    @property
    def upstream(self) -> str:
        return f"{self.out}\n\n{self.err}".rstrip("\n")


FIXED = Cmd("decoded 12 bytes\n")
TRIGGERS = Cmd(
    "decoding\n",
    "==42==ERROR: AddressSanitizer: heap-buffer-overflow\n"
    "SUMMARY: AddressSanitizer: heap-buffer-overflow rle.c:41\n",
    1,
)


@dataclass(frozen=True)
class Spec:
    build: Cmd | None = Cmd("cc -c rle.c\ncc -o rle rle.o\n")
    pocs: tuple[Cmd, ...] = (FIXED, FIXED)
    intent: Cmd | None = Cmd("intent: 3 passed\n")
    functional: Cmd | None = Cmd("ok 1 - roundtrip\nok 2 - empty\n")

    def shown(self, name: str) -> Cmd:
        """The command whose log a report shows under "Full log (NAME):"."""
        if name == "PoCs":
            return next(poc for poc in self.pocs if poc.code)
        found = {"build": self.build, "intent tests": self.intent,
                 "functional tests": self.functional}[name]  # fmt: skip
        assert found is not None
        return found


PASSING = Spec()
OUTCOMES = {
    "passing": PASSING,
    "build fails": replace(PASSING, build=Cmd("cc -c rle.c\n", "rle.c:41: error: expected ;", 2)),
    "a PoC still triggers": replace(PASSING, pocs=(FIXED, TRIGGERS, FIXED)),
    "functional fails": replace(PASSING, functional=Cmd("not ok 2 - empty\n", code=1)),
    "intent fails": replace(PASSING, intent=Cmd(err="FAIL: test_bounds\n", code=1)),
    "PoC and functional fail": replace(
        PASSING, pocs=(TRIGGERS,), functional=Cmd(err="not ok 1\n", code=3)
    ),
}


def as_upstream(ours: str, spec: Spec) -> str:
    """Our daemon's report with its log joined as upstream's MCP server joins it."""
    found = re.search(r"\nFull log \(([^)]*)\):\n", ours)
    if found is None:
        return ours
    cmd = spec.shown(found[1])
    assert ours[found.end() :] == cmd.ours
    return ours[: found.end()] + cmd.upstream


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
        for path, poc in zip(paths, spec.pocs, strict=True):
            path.write_text(poc.shell + "\n")
        given = {"build": spec.build, "intent": spec.intent, "functional": spec.functional}
        shell = {key: cmd.shell if cmd else None for key, cmd in given.items()}
        standin = StandinTask(tmp_path, shell["build"], [str(p) for p in paths], POC_RUN)
        standin.function_test, standin.intent_test = shell["functional"], shell["intent"]
        task = ssebench_task(
            {k: v for k, v in shell.items() if v is not None}
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
    spec = OUTCOMES[outcome]
    task, standin_task = make_pair(spec)
    standin, environ = serve_standin(standin_task, 0)
    for level in range(5):
        standin.level = level
        expected = as_upstream(task.report(level), spec)
        assert report(task, level, environ=environ) == expected, f"level {level}"
    assert standin.most_running == 1


def test_logs_are_joined_as_upstreams_mcp_server_shows_them(make_pair: Any) -> None:
    build = Cmd("compiling rle.c", "rle.c:1: error: expected ;\n", 1)
    task, standin_task = make_pair(replace(PASSING, build=build))
    with serving_app(create_standin(standin_task, 2)) as url:
        text = report(task, 2, url=url)
    assert text.endswith("Full log (build):\ncompiling rle.c\n\nrle.c:1: error: expected ;")
    assert task.report(2).endswith("Full log (build):\ncompiling rle.crle.c:1: error: expected ;")


def test_long_log_is_cut_and_saved_as_on_our_daemon(make_pair: Any) -> None:
    words = " ".join(str(n) for n in range(1, 12001))
    lines = "".join(f"{n}\n" for n in range(1, 151))
    spec = replace(PASSING, functional=Cmd(f"{words}\n{lines}", code=1))
    task, standin_task = make_pair(spec)
    with serving_app(create_standin(standin_task, 2)) as url:
        ours, theirs = task.report(2), report(task, 2, url=url)
    saved = re.compile(r"Full log available at (\S+)$")
    paths = [Path(saved.search(text)[1]) for text in (ours, theirs)]  # type: ignore[index]
    assert saved.sub("", ours) == saved.sub("", theirs)
    assert paths[1].read_bytes() == paths[0].read_bytes() + b"\n\n"  # stdout, "\n\n", stderr


def test_auto_detection_picks_the_api_that_answers(make_pair: Any) -> None:
    spec = OUTCOMES["a PoC still triggers"]
    task, standin_task = make_pair(spec)
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
        assert isinstance(found, UpstreamDaemon) and text == as_upstream(task.report(1), spec)
        assert said == f"the upstream ssebench daemon API (version 1.0.0) at {their_url}"


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
