"""The daemon's HTTP app in-process through httpx's ASGI transport: its answers that run no case
(tests/e2e/test_daemon_app.py runs cases, and once over real uvicorn)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from daemon_app import create_app

from ssebench.core.registry import Registry, build_registry
from ssebench.daemon.task import load_task
from ssebench.plugins import build, functional, intent, poc

REGISTRY = build_registry(plugins=[build, poc, intent, functional], use_entry_points=False)
BASE = "http://d"

# What each check of the task below runs. pocs case 1 still triggers (SEGV); the rest pass or
# fail on their exit status.
TASK_TOML = """\
source = "src"

[checks.build]
run = "echo built; echo warning >&2"
timeout = 30

[checks.pocs]
cases = ["echo poc0", "echo poc1; kill -SEGV $$", "echo poc2"]
timeout = 20

[checks.intent]
run = '''printf 'intent\\000\\377\\n'; exit 3'''

[checks.functional]
cases = [
    'echo f0 $SSE_TASK_DIR ${SSE_SOURCE_DIR##*/}; [ "$PWD" = "$SSE_SOURCE_DIR" ] && echo in it',
    "exit 1",
]
timeout = 5.5
"""

BUILD_INFO = {"key": "build", "name": "build", "cases": 1, "timeout": 30.0}
POCS_INFO = {"key": "pocs", "name": "PoCs", "cases": 3, "timeout": 20.0}
INTENT_INFO = {"key": "intent", "name": "intent tests", "cases": 1, "timeout": 3600.0}
FUNCTIONAL_INFO = {"key": "functional", "name": "functional tests", "cases": 2, "timeout": 5.5}


def make_task(folder: Path, text: str = TASK_TOML):
    (folder / "src").mkdir(parents=True, exist_ok=True)
    (folder / "task.toml").write_text(text)
    return load_task(folder, REGISTRY.checks)


def run_app(
    folder: Path,
    level: int | None,
    job: Callable[[httpx.AsyncClient], Awaitable[Any]],
    *,
    text: str = TASK_TOML,
    registry: Registry = REGISTRY,
) -> Any:
    task = make_task(folder, text)
    spool = folder / "spool"
    spool.mkdir(exist_ok=True)
    app = create_app(task, registry, level, spool=spool)

    async def main() -> Any:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
            return await job(client)

    return asyncio.run(main())


def test_health(tmp_path: Path) -> None:
    async def job(client: httpx.AsyncClient) -> tuple[int, Any]:
        response = await client.get("/v1/health")
        return response.status_code, response.json()

    assert run_app(tmp_path, 2, job) == (200, {"status": "ok", "difficulty": 2})
    assert run_app(tmp_path, None, job) == (200, {"status": "ok", "difficulty": None})
    assert run_app(tmp_path, 0, job) == (200, {"status": "ok", "difficulty": 0})


@pytest.mark.parametrize(
    ("level", "listed"),
    [
        (0, [BUILD_INFO, POCS_INFO, INTENT_INFO, FUNCTIONAL_INFO]),
        (1, [BUILD_INFO, POCS_INFO, FUNCTIONAL_INFO]),
        (2, [BUILD_INFO, FUNCTIONAL_INFO]),
        (3, [BUILD_INFO]),
        (4, []),
        (None, [BUILD_INFO, POCS_INFO, INTENT_INFO, FUNCTIONAL_INFO]),
    ],
)
def test_checks_lists_the_enabled_checks_in_order(
    tmp_path: Path, level: int | None, listed: list[dict[str, Any]]
) -> None:
    async def job(client: httpx.AsyncClient) -> tuple[int, Any]:
        response = await client.get("/v1/checks")
        return response.status_code, response.json()

    assert run_app(tmp_path, level, job) == (200, {"checks": listed})


def test_a_check_the_task_lacks_is_listed_with_no_cases(tmp_path: Path) -> None:
    async def job(client: httpx.AsyncClient) -> Any:
        return (await client.get("/v1/checks")).json()

    text = 'source = "src"\n[checks.functional]\nrun = "true"\n'
    assert run_app(tmp_path, 1, job, text=text) == {
        "checks": [
            {"key": "build", "name": "build", "cases": 0, "timeout": 3600.0},
            {"key": "pocs", "name": "PoCs", "cases": 0, "timeout": 3600.0},
            {"key": "functional", "name": "functional tests", "cases": 1, "timeout": 3600.0},
        ]
    }


WITHHELD_AT_2 = {
    "pocs": {"error": "PoCs: not available at difficulty level 2"},
    "intent": {"error": "intent tests: not available at difficulty level 2"},
}
INDEXES = ["0", "1", "2", "99", "-1", "abc", "%C2%B2", "00"]


@pytest.mark.parametrize("key", ["pocs", "intent"])
def test_a_withheld_check_answers_403_whatever_the_index(tmp_path: Path, key: str) -> None:
    async def job(client: httpx.AsyncClient) -> list[tuple[int, Any]]:
        answers = []
        for index in INDEXES:
            response = await client.post(f"/v1/checks/{key}/cases/{index}/run")
            answers.append((response.status_code, response.json()))
        return answers

    expected = [(403, WITHHELD_AT_2[key])] * len(INDEXES)
    assert run_app(tmp_path, 2, job) == expected
    # A task without that check answers alike: not even its existence can be probed.
    assert run_app(tmp_path / "bare", 2, job, text='source = "src"\n') == expected
    assert not (tmp_path / "spool").exists() or list((tmp_path / "spool").iterdir()) == []


@pytest.mark.parametrize("key", ["pocs", "intent"])
def test_every_route_under_a_withheld_check_answers_403(tmp_path: Path, key: str) -> None:
    routes = [
        ("GET", f"/v1/checks/{key}"),
        ("POST", f"/v1/checks/{key}"),
        ("GET", f"/v1/checks/{key}/cases"),
        ("GET", f"/v1/checks/{key}/cases/0"),
        ("GET", f"/v1/checks/{key}/cases/7"),
        ("GET", f"/v1/checks/{key}/cases/0/run"),
        ("POST", f"/v1/checks/{key}/cases/0/run/"),
        ("POST", f"/v1/checks/{key}/cases/0/log"),
        ("PUT", f"/v1/checks/{key}/cases/0/run"),
        ("DELETE", f"/v1/checks/{key}/cases/0/run"),
        ("PATCH", f"/v1/checks/{key}"),
    ]

    async def job(client: httpx.AsyncClient) -> list[tuple[str, str, int, Any]]:
        answers = []
        for method, path in routes:
            response = await client.request(method, path)
            answers.append((method, path, response.status_code, response.json()))
        return answers

    expected = [(method, path, 403, WITHHELD_AT_2[key]) for method, path in routes]
    assert run_app(tmp_path, 2, job) == expected


def test_unknown_routes_answer_404_json(tmp_path: Path) -> None:
    requests = [
        ("POST", "/v1/checks/lint/cases/0/run", {"error": "no check 'lint'"}),
        ("GET", "/v1/checks/lint", {"error": "no such route"}),
        ("GET", "/v1/checks/build/cases", {"error": "no such route"}),
        ("GET", "/v1/nothing", {"error": "no such route"}),
        ("GET", "/", {"error": "no such route"}),
        ("GET", "/v1/logs/0123456789abcdef0123456789abcdef", {"error": "no such log"}),
        ("GET", "/v1/logs/..%2Ftask.toml", {"error": "no such route"}),
        ("GET", "/v1/logs/task.toml", {"error": "no such log"}),
    ]

    async def job(client: httpx.AsyncClient) -> list[tuple[str, int, Any]]:
        answers = []
        for method, path, _ in requests:
            response = await client.request(method, path)
            answers.append((path, response.status_code, response.json()))
        return answers

    assert run_app(tmp_path, 2, job) == [(path, 404, body) for _, path, body in requests]


def test_a_wrong_method_on_an_enabled_route(tmp_path: Path) -> None:
    async def job(client: httpx.AsyncClient) -> list[tuple[int, Any]]:
        return [
            ((r := await client.post("/v1/health")).status_code, r.json()),
            ((r := await client.delete("/v1/logs/x")).status_code, r.json()),
        ]

    assert run_app(tmp_path, 2, job) == [
        (405, {"error": "method not allowed"}),
        (405, {"error": "method not allowed"}),
    ]


@pytest.mark.parametrize(
    ("key", "index", "name"),
    [
        ("functional", "2", "functional tests"),
        ("functional", "99", "functional tests"),
        ("functional", "-1", "functional tests"),
        ("functional", "abc", "functional tests"),
        ("functional", "1.0", "functional tests"),
        ("functional", "%C2%B2", "functional tests"),  # "²": a digit to str.isdigit, not to int
        ("functional", "%D9%A1", "functional tests"),  # Arabic-Indic one: not case 1
        ("build", "1", "build"),
    ],
)
def test_an_index_out_of_range_on_an_enabled_check_is_404(
    tmp_path: Path, key: str, index: str, name: str
) -> None:
    async def job(client: httpx.AsyncClient) -> tuple[int, Any]:
        response = await client.post(f"/v1/checks/{key}/cases/{index}/run")
        return response.status_code, response.json()

    shown = httpx.URL(f"/{index}").path[1:]
    assert run_app(tmp_path, 2, job) == (404, {"error": f"no case {shown} of {name}"})
    assert not list((tmp_path / "spool").iterdir())


def test_an_enabled_check_the_task_lacks_has_no_case_0(tmp_path: Path) -> None:
    async def job(client: httpx.AsyncClient) -> tuple[int, Any]:
        response = await client.post("/v1/checks/build/cases/0/run")
        return response.status_code, response.json()

    assert run_app(tmp_path, 2, job, text='source = "src"\n') == (
        404,
        {"error": "no case 0 of build"},
    )


def test_level_4_runs_nothing(tmp_path: Path) -> None:
    async def job(client: httpx.AsyncClient) -> list[tuple[int, Any]]:
        answers = []
        for key in ["build", "pocs", "intent", "functional"]:
            response = await client.post(f"/v1/checks/{key}/cases/0/run")
            answers.append((response.status_code, response.json()))
        return answers

    assert run_app(tmp_path, 4, job) == [
        (403, {"error": "build: not available at difficulty level 4"}),
        (403, {"error": "PoCs: not available at difficulty level 4"}),
        (403, {"error": "intent tests: not available at difficulty level 4"}),
        (403, {"error": "functional tests: not available at difficulty level 4"}),
    ]


def test_a_command_that_cannot_start_is_a_500_json_error(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    spool = tmp_path / "spool"
    spool.mkdir()
    app = create_app(task, REGISTRY, 2, spool=spool)
    (tmp_path / "src").rmdir()  # the tree vanished after start-up: the copy cannot be synced

    async def main() -> tuple[int, Any]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
            response = await client.post("/v1/checks/build/cases/0/run")
            return response.status_code, response.json()

    source = (tmp_path / "src").resolve()
    assert asyncio.run(main()) == (
        500,
        {
            "error": f"cannot bring the runner copy of {source} up to date: "
            f"[Errno 2] No such file or directory: '{source}'"
        },
    )
