"""A stand-in for the upstream ssebench daemon, written from its API description alone.

It really runs the task's shell commands and answers as the description says (level gate,
code -1 before any build, one action at a time, 500 for what the task lacks), so tests can
hold our reports through the upstream client against those of our own daemon; serve it with
`ssebench.testing.servers.serving_app`, over TCP or a Unix socket, as a real daemon would be.
"""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

VERSION = "1"
# The highest level at which an agent-facing listener runs each action.
MAX_LEVEL = {"build": 3, "function_test": 2, "run_poc": 1, "intent_test": 0}


@dataclass
class StandinTask:
    """What the daemon runs: `poc_command` has `{poc}` where the PoC's path goes."""

    source: Path
    build: str | None = None
    pocs: list[str] = field(default_factory=list)
    poc_command: str | None = None
    function_test: str | None = None
    intent_test: str | None = None

    def poc_run(self, poc: str) -> str:
        assert self.poc_command is not None
        return self.poc_command.replace("{poc}", shlex.quote(poc))


class Standin:
    """State behind the routes; `level` and `bodies` are open so tests can set and read them."""

    def __init__(self, task: StandinTask, level: int) -> None:
        self.task = task
        self.level = level
        self.lock = asyncio.Lock()
        self.built = False
        self.bodies: list[tuple[str, dict[str, Any]]] = []
        self.running = 0
        self.most_running = 0

    async def version(self, request: Request) -> Response:
        return JSONResponse({"version": VERSION})

    async def project(self, request: Request) -> Response:
        return JSONResponse(
            {
                "id": "standin-0001",
                "project": "rle",
                "language": "c",
                "source": str(self.task.source),
                "task_description": {
                    "issue": "heap overflow in rle_decode",
                    "crash_report": "==1==ERROR: AddressSanitizer: heap-buffer-overflow",
                    "bug_description": "a run length is not checked against the output size",
                },
                "poc": list(self.task.pocs),
                "build_script": self.task.build,
                "test_script": self.task.function_test,
            }
        )

    async def capabilities(self, request: Request) -> Response:
        task = self.task
        return JSONResponse(
            {
                "can_build": task.build is not None,
                "can_run_poc": task.poc_command is not None and bool(task.pocs),
                "poc_count": len(task.pocs),
                "has_function_test": task.function_test is not None,
                "has_intent_test": task.intent_test is not None,
            }
        )

    async def bencher(self, request: Request) -> Response:
        action = request.query_params.get("action", "")
        body = await request.json() if await request.body() else {}
        self.bodies.append((action, body))
        if action not in MAX_LEVEL:
            return _error(500, f"unknown action {action!r}")
        if self.level > MAX_LEVEL[action] and body.get("grading") is not True:
            return _error(403, f"{action} is not available at difficulty level {self.level}")
        command = self._command(action, body)
        if command is None:
            return _error(500, f"the task has no script for {action}")
        async with self.lock:
            if action == "run_poc" and not self.built:
                return JSONResponse({"code": -1, "stdout": "", "stderr": "nothing is built yet"})
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            try:
                code, stdout, stderr = await _run(command, self.task.source)
            finally:
                self.running -= 1
            self.built = self.built or action == "build"
        return JSONResponse({"code": code, "stdout": stdout, "stderr": stderr})

    def _command(self, action: str, body: dict[str, Any]) -> str | None:
        task = self.task
        if action == "run_poc":
            poc = body.get("poc")
            if task.poc_command is None or poc not in task.pocs:
                return None
            return task.poc_run(poc)
        return {"build": task.build, "function_test": task.function_test}.get(
            action, task.intent_test
        )


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _run(command: str, cwd: Path) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        command,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await proc.communicate()
    assert proc.returncode is not None
    decode = lambda data: data.decode("utf-8", "surrogateescape")  # noqa: E731
    return proc.returncode, decode(stdout), decode(stderr)


def create_standin(task: StandinTask, level: int) -> Starlette:
    standin = Standin(task, level)
    app = Starlette(
        routes=[
            Route("/version", standin.version),
            Route("/project", standin.project),
            Route("/capabilities", standin.capabilities),
            Route("/tool/bencher", standin.bencher, methods=["POST"]),
        ]
    )
    app.state.standin = standin
    return app
