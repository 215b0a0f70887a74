"""A stand-in for the upstream ssebench daemon, written to its published contract (its
openapi.yaml, handlers and SDK: ../docs/upstream.md), as a task container runs it.

It really runs the task's shell commands in copies of the tree, as upstream's daemon does: a
build in a fresh copy that the PoCs then run in (`code: -1` before any build), each test in a
fresh copy, the hidden tests applied there with `git apply -p1` (500 `git apply failed, ...`
when they do not apply). `code` is -1 for a process that ended without an exit status. Three
listeners share one state (`serving_standin`): the agent-facing Unix socket (0666) and TCP port,
which gate each action by the level, refuse `grading: true` and every tool once the agent's
phase has ended; and the admin socket (0600), which gates nothing and alone answers
`POST /prepare_grading` (the agent's diff, against the tree as the daemon started, applied to a
clean copy that `grading: true` then runs on), `POST /admin/agent_exited` and
`GET /reference/patch`. One action runs at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ssebench.testing.servers import serving_app

VERSION = "1.0.0"  # the daemon's release
# The highest level at which an agent-facing listener runs each action (x-difficulty-gate).
MAX_LEVEL = {"build": 3, "function_test": 2, "run_poc": 1, "intent_test": 0}
ADMIN_ONLY = "endpoint is only available on the admin socket"
# git as data: no repository, configuration or attribute of the tree.
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_ATTR_NOSYSTEM": "1"}


@dataclass
class StandinTask:
    """What the daemon runs: `poc_command` has `{poc}` where the PoC's path goes; `intent_test`
    runs after `hidden_tests` (a diff, if any) applied to its copy of the tree."""

    source: Path
    build: str | None = None
    pocs: list[str] = field(default_factory=list)
    poc_command: str | None = None
    function_test: str | None = None
    intent_test: str | None = None
    hidden_tests: str | None = None
    reference_patch: str = ""

    def poc_run(self, poc: str) -> str:
        assert self.poc_command is not None
        return self.poc_command.replace("{poc}", shlex.quote(poc))


class Refused(Exception):
    def __init__(self, status: int, error: str) -> None:
        super().__init__(error)
        self.status, self.error = status, error


class Standin:
    """State behind every listener; `level`, `bodies` (action, body, privileged) and `drift`
    (files that make the clean copy for grading differ from the tree as the daemon started)
    are open for tests to set and read."""

    def __init__(self, task: StandinTask, level: int) -> None:
        self.task = task
        self.level = level
        self.lock = asyncio.Lock()
        self.scratch = Path(tempfile.mkdtemp(prefix="standin-"))
        self.baseline = self._copy(task.source, "baseline")  # as the image built it
        self.repo: Path | None = None  # $SSE_REPO_PATH, once /prepare_grading made it
        self.latest_build: Path | None = None
        self.agent_exited = False
        self.drift: dict[str, str] = {}
        self.bodies: list[tuple[str, dict[str, Any], bool]] = []
        self.running = 0
        self.most_running = 0

    def app(self, *, privileged: bool, owned: bool = False) -> Starlette:
        """One listener; `owned`: the stand-in's only one, which closes it when it stops."""

        def route(path: str, handler: Any, method: str = "GET") -> Route:
            async def endpoint(request: Request) -> Response:
                try:
                    return await handler(request, privileged)  # type: ignore[no-any-return]
                except Refused as exc:
                    return JSONResponse({"error": exc.error}, status_code=exc.status)

            return Route(path, endpoint, methods=[method])

        app = Starlette(routes=[
            route("/version", self.version), route("/project", self.project),
            route("/capabilities", self.capabilities),
            route("/tool/{name}", self.tool, "POST"),
            route("/prepare_grading", self.prepare_grading, "POST"),
            route("/admin/agent_exited", self.agent_exit, "POST"),
            route("/reference/patch", self.reference),
        ], lifespan=self._lifespan if owned else None)  # fmt: skip
        app.state.standin = self
        return app

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            self.close()

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    async def version(self, request: Request, privileged: bool) -> Response:
        return JSONResponse({"version": VERSION})

    async def project(self, request: Request, privileged: bool) -> Response:
        report = "==1==ERROR: AddressSanitizer: heap-buffer-overflow"
        description = {"issue": "heap overflow in rle_decode", "bug_description": None,
                       "crash_report": [report]}  # fmt: skip
        return JSONResponse({
            "id": "standin-0001", "project": "rle", "language": "c",
            "source": str(self.task.source), "task_description": description,
            "poc": list(self.task.pocs), "build_script": self.task.build,
            "test_script": self.task.function_test,
        })  # fmt: skip

    async def capabilities(self, request: Request, privileged: bool) -> Response:
        task = self.task
        return JSONResponse({
            "can_build": task.build is not None,
            "can_run_poc": task.poc_command is not None and bool(task.pocs),
            "poc_count": len(task.pocs),
            "has_function_test": task.function_test is not None,
            "has_intent_test": task.function_test is not None and task.intent_test is not None,
        })  # fmt: skip

    async def tool(self, request: Request, privileged: bool) -> Response:
        action = request.query_params.get("action")
        try:
            body = await request.json()
        except ValueError:
            body = None
        if action is None or not isinstance(body, dict):
            return PlainTextResponse("Query deserialize error or Json deserialize error", 400)
        self.bodies.append((action, body, privileged))
        if request.path_params["name"] != "bencher":
            raise Refused(500, f"unknown tool: {request.path_params['name']}")
        if not privileged:
            self._gate(action, body)
        async with self.lock:
            code, stdout, stderr = await self._action(action, body)
        return JSONResponse({"code": code, "stdout": stdout, "stderr": stderr})

    def _gate(self, action: str, body: dict[str, Any]) -> None:
        """What an agent-facing listener refuses: every tool after the agent's phase, grading,
        an action the level withholds."""
        if self.agent_exited:
            raise Refused(403, "tools are not available after the agent phase")
        if body.get("grading") is True:
            raise Refused(403, "grading is only available on the admin socket")
        if action in MAX_LEVEL and self.level > MAX_LEVEL[action]:
            why = f"action '{action}' is not available at the current difficulty level"
            raise Refused(403, why)

    async def _action(self, action: str, body: dict[str, Any]) -> tuple[int, str, str]:
        task = self.task
        if action == "run_poc":
            poc = body.get("poc")
            if task.poc_command is None or not isinstance(poc, str) or poc not in task.pocs:
                raise Refused(500, f"not a PoC of this task: {poc}")
            if self.latest_build is None:
                return -1, "", "project hasn't been built yet - call 'build' action first"
            return await self._run(task.poc_run(poc), self.latest_build)
        scripts = {"build": task.build, "function_test": task.function_test,
                   "intent_test": task.intent_test}  # fmt: skip
        if action not in scripts:
            raise Refused(500, f"invalid action: {action}")
        command = scripts[action]
        if command is None or (action == "intent_test" and task.function_test is None):
            raise Refused(500, f"{action} not configured")
        tree = self._workspace(body.get("grading") is True, action)
        if action == "build":
            self.latest_build = tree
        elif action == "intent_test" and task.hidden_tests is not None:
            await self._apply(task.hidden_tests, tree, strip=1)
        return await self._run(command, tree)

    def _workspace(self, grading: bool, action: str) -> Path:
        """A fresh copy of the tree the action runs on: the agent's, or the graded one."""
        if grading and self.repo is None:
            raise Refused(500, "no graded copy: POST /prepare_grading first")
        if action == "build" and self.latest_build is not None:
            shutil.rmtree(self.latest_build.parent, ignore_errors=True)
            self.latest_build = None
        return self._copy(self.repo if grading and self.repo else self.task.source, "workspace")

    async def prepare_grading(self, request: Request, privileged: bool) -> Response:
        if not privileged:
            raise Refused(403, ADMIN_ONLY)
        async with self.lock:
            self.latest_build = None  # a new session: nothing of the agent's phase is used
            current = self._copy(self.task.source, "current")
            old, new = (str(tree.relative_to(self.scratch)) for tree in (self.baseline, current))
            diff = await _git(["diff", "--no-index", "--binary", old, new], self.scratch)
            repo = self._copy(self.baseline, "repo")
            for name, text in self.drift.items():
                (repo / name).write_text(text)
            await self._apply(diff[1], repo, strip=len(Path(old).parts) + 1)
            self.repo = repo
        return JSONResponse({"success": True})

    async def agent_exit(self, request: Request, privileged: bool) -> Response:
        if not privileged:
            raise Refused(403, ADMIN_ONLY)
        self.agent_exited = True
        return JSONResponse({"success": True})

    async def reference(self, request: Request, privileged: bool) -> Response:
        if not privileged:
            raise Refused(403, ADMIN_ONLY)
        return JSONResponse({"diff": self.task.reference_patch})

    async def _apply(self, diff: str, tree: Path, *, strip: int) -> None:
        if not diff:
            return
        patch = tree.parent / "patch.diff"
        patch.write_text(diff)
        code, stdout, stderr = await _git(["apply", f"-p{strip}", str(patch)], tree)
        if code != 0:
            raise Refused(500, f"git apply failed, {stdout}, {stderr}")

    def _copy(self, tree: Path, name: str) -> Path:
        folder = Path(tempfile.mkdtemp(dir=self.scratch)) / name
        shutil.copytree(tree, folder, symlinks=True)
        return folder

    async def _run(self, command: str, cwd: Path) -> tuple[int, str, str]:
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            return await _process(["bash", "-c", command], cwd)
        finally:
            self.running -= 1


async def _git(args: list[str], cwd: Path) -> tuple[int, str, str]:
    return await _process(["git", *args], cwd, {**os.environ, **GIT_ENV})


async def _process(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """Its status (-1: it ended without one, by a signal), stdout and stderr."""
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, stderr = await proc.communicate()
    assert proc.returncode is not None
    decode = lambda data: data.decode("utf-8", "surrogateescape")  # noqa: E731
    return max(proc.returncode, -1), decode(stdout), decode(stderr)


def create_standin(task: StandinTask, level: int, *, privileged: bool = False) -> Starlette:
    """One listener of a new stand-in (`app.state.standin`): agent-facing unless `privileged`."""
    return Standin(task, level).app(privileged=privileged, owned=True)


@dataclass(frozen=True)
class Listeners:
    """Where a stand-in listens, as a task container's environment names it."""

    standin: Standin
    socket: str  # SSE_DAEMON_SOCKET, mode 0666
    tcp: str  # SSE_AGENT_DOCKER's host:port (upstream's SSE_HTTP_PORT)
    admin: str  # SSE_ADMIN_SOCKET, mode 0600


@contextlib.contextmanager
def serving_standin(task: StandinTask, level: int) -> Iterator[Listeners]:
    """The three listeners of one stand-in, until the block ends."""
    standin = Standin(task, level)
    folder = tempfile.mkdtemp(prefix="sse-", dir="/tmp")  # a socket's path is short
    try:
        with contextlib.ExitStack() as stack:
            socket, admin = f"{folder}/daemon.sock", f"{folder}/admin.sock"
            stack.enter_context(serving_app(standin.app(privileged=False), uds=socket))
            os.chmod(socket, 0o666)
            stack.enter_context(serving_app(standin.app(privileged=True), uds=admin))
            os.chmod(admin, 0o600)
            tcp = stack.enter_context(serving_app(standin.app(privileged=False)))
            yield Listeners(standin, socket, tcp.removeprefix("http://"), admin)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        standin.close()
