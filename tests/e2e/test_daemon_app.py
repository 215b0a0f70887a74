"""The daemon's HTTP app running cases: in-process through httpx's ASGI transport, and once
over real uvicorn (tests/unit/test_daemon_app.py has its answers that run nothing)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from daemon_app import create_app
from unit.test_daemon_app import BASE, REGISTRY, make_task, run_app

from ssebench.core.daemons.door import ServiceConfig
from ssebench.core.daemons.inprocess import open_service
from ssebench.daemon.app import http_app
from ssebench.testing.procs import wait_group_gone
from ssebench.testing.servers import serving_app


def _without_timing(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer with its varying parts checked and blanked, so the rest compares whole."""
    assert isinstance(answer["seconds"], float)
    assert 0 <= answer["seconds"] < 10
    assert re.fullmatch(r"[0-9a-f]{32}", answer["log_id"])
    return {**answer, "seconds": 0.0, "log_id": "-"}


async def _run_and_log(
    client: httpx.AsyncClient, key: str, index: int
) -> tuple[dict[str, Any], bytes]:
    response = await client.post(f"/v1/checks/{key}/cases/{index}/run")
    assert response.status_code == 200, response.text
    answer = response.json()
    log = await client.get(f"/v1/logs/{answer['log_id']}")
    assert log.status_code == 200
    assert log.headers["content-type"] == "application/octet-stream"
    assert answer["log_size"] == len(log.content)
    return answer, log.content


def test_run_answers_the_judged_result_and_the_log_streams_its_bytes(tmp_path: Path) -> None:
    async def job(client: httpx.AsyncClient) -> list[tuple[dict[str, Any], bytes]]:
        return [
            await _run_and_log(client, "build", 0),
            await _run_and_log(client, "pocs", 0),
            await _run_and_log(client, "pocs", 1),
            await _run_and_log(client, "intent", 0),
            await _run_and_log(client, "functional", 0),
            await _run_and_log(client, "functional", 1),
        ]

    results = run_app(tmp_path, 0, job)
    task_dir = tmp_path.resolve()
    f0_log = f"f0 {task_dir} src\nin it\n".encode()  # in its runner copy of the tree
    expected = [
        (
            {"key": "build", "index": 0, "passed": True, "exit_code": 0, "signal": None},
            b"built\nwarning\n",
        ),
        (
            {"key": "pocs", "index": 0, "passed": True, "exit_code": 0, "signal": None},
            b"poc0\n",
        ),
        (
            {"key": "pocs", "index": 1, "passed": False, "exit_code": None, "signal": 11},
            b"poc1\n",
        ),
        (
            {"key": "intent", "index": 0, "passed": False, "exit_code": 3, "signal": None},
            b"intent\x00\xff\n",
        ),
        (
            {"key": "functional", "index": 0, "passed": True, "exit_code": 0, "signal": None},
            f0_log,
        ),
        (
            {"key": "functional", "index": 1, "passed": False, "exit_code": 1, "signal": None},
            b"",
        ),
    ]
    got = [(_without_timing(answer), log) for answer, log in results]
    assert got == [
        (
            {
                **head,
                "timed_out": False,
                "seconds": 0.0,
                "log_id": "-",
                "log_size": len(log),
                "killed": 0,
                "dropped": 0,
            },
            log,
        )
        for head, log in expected
    ]
    assert len({answer["log_id"] for answer, _ in results}) == len(results)


def test_a_timed_out_case(tmp_path: Path) -> None:
    text = 'source = "src"\n[checks.functional]\nrun = "echo started; sleep 30"\ntimeout = 0.5\n'

    async def job(client: httpx.AsyncClient) -> tuple[dict[str, Any], bytes]:
        return await _run_and_log(client, "functional", 0)

    started = time.monotonic()
    answer, log = run_app(tmp_path, 2, job, text=text)
    assert time.monotonic() - started < 3.0
    assert _without_timing(answer) == {
        "key": "functional",
        "index": 0,
        "passed": False,
        "exit_code": None,
        "signal": 15,
        "timed_out": True,
        "seconds": 0.0,
        "log_id": "-",
        "log_size": 8,
        "killed": 0,
        "dropped": 0,
    }
    assert log == b"started\n"


def test_a_large_binary_log_streams_byte_exact(tmp_path: Path) -> None:
    blob = os.urandom(5 << 20)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "blob").write_bytes(blob)
    text = 'source = "src"\n[checks.build]\nrun = "cat blob"\n'

    async def job(client: httpx.AsyncClient) -> tuple[dict[str, Any], bytes]:
        return await _run_and_log(client, "build", 0)

    answer, log = run_app(tmp_path, 2, job, text=text)
    assert (answer["log_size"], log == blob) == (len(blob), True)


def test_a_rerun_replaces_the_old_log(tmp_path: Path) -> None:
    text = 'source = "src"\n[checks.build]\ncases = ["date +%s%N", "echo other"]\n'

    async def job(client: httpx.AsyncClient) -> dict[str, Any]:
        first, first_log = await _run_and_log(client, "build", 0)
        other, _ = await _run_and_log(client, "build", 1)
        second, second_log = await _run_and_log(client, "build", 0)
        old = await client.get(f"/v1/logs/{first['log_id']}")
        again = await client.get(f"/v1/logs/{second['log_id']}")
        kept = await client.get(f"/v1/logs/{other['log_id']}")
        return {
            "new id": first["log_id"] != second["log_id"],
            "new log": first_log != second_log,
            "old": (old.status_code, old.json()),
            "again": (again.status_code, again.content == second_log),
            "kept": (kept.status_code, kept.content),
            "spool": sorted(path.name for path in (tmp_path / "spool").iterdir())
            == sorted([f"{second['log_id']}.log", f"{other['log_id']}.log"]),
        }

    assert run_app(tmp_path, 2, job, text=text) == {
        "new id": True,
        "new log": True,
        "old": (404, {"error": "no such log"}),
        "again": (200, True),
        "kept": (200, b"other\n"),
        "spool": True,
    }


def marks(folder: Path) -> str:
    """Where unconfined cases leave what the test reads afterwards (their tree is a copy)."""
    (folder / "marks").mkdir(exist_ok=True)
    return f'env = {{ MARKS = "{folder / "marks"}" }}\n'


def test_concurrent_runs_are_serialized(tmp_path: Path) -> None:
    stamp = 'echo "$1 $(date +%s.%N)" >> "$MARKS/times"'
    case = f"stamp() {{ {stamp}; }}; stamp start; sleep 0.3; stamp end"
    text = f"source = \"src\"\n{marks(tmp_path)}[checks.functional]\ncases = ['{case}', '{case}']\n"

    async def job(client: httpx.AsyncClient) -> list[int]:
        responses = await asyncio.gather(
            client.post("/v1/checks/functional/cases/0/run"),
            client.post("/v1/checks/functional/cases/1/run"),
            client.post("/v1/checks/functional/cases/0/run"),
        )
        return [response.status_code for response in responses]

    started = time.monotonic()
    assert run_app(tmp_path, 2, job, text=text) == [200, 200, 200]
    assert time.monotonic() - started >= 0.9
    lines = [line.split() for line in (tmp_path / "marks" / "times").read_text().splitlines()]
    assert [word for word, _ in lines] == ["start", "end"] * 3
    stamps = [float(value) for _, value in lines]
    assert stamps == sorted(stamps)


def test_the_evaluator_level_runs_every_check(tmp_path: Path) -> None:
    async def job(client: httpx.AsyncClient) -> list[Any]:
        listed = (await client.get("/v1/checks")).json()
        keys = [info["key"] for info in listed["checks"]]
        runs = []
        for info in listed["checks"]:
            for index in range(info["cases"]):
                response = await client.post(f"/v1/checks/{info['key']}/cases/{index}/run")
                runs.append((response.status_code, info["key"], response.json()["passed"]))
        return [keys, runs]

    assert run_app(tmp_path, None, job) == [
        ["build", "pocs", "intent", "functional"],
        [
            (200, "build", True),
            (200, "pocs", True),
            (200, "pocs", False),
            (200, "pocs", True),
            (200, "intent", False),
            (200, "functional", True),
            (200, "functional", False),
        ],
    ]


def test_without_a_spool_the_app_owns_a_temporary_one(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    service = open_service(ServiceConfig(task, REGISTRY, 2))
    app = http_app(service, owned=True)
    spool = service.place.spool.folder

    async def main() -> bytes:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
                answer, log = await _run_and_log(client, "build", 0)
                assert (spool / f"{answer['log_id']}.log").exists()
                return log

    assert asyncio.run(main()) == b"built\nwarning\n"
    assert not spool.exists()


# --- over a real server -----------------------------------------------------------------------


@contextlib.contextmanager
def real_server(folder: Path, text: str, level: int | None) -> Iterator[str]:
    task = make_task(folder, text)
    spool = folder / "spool"
    spool.mkdir(exist_ok=True)
    with serving_app(create_app(task, REGISTRY, level, spool=spool)) as url:
        yield url


def test_a_client_that_goes_away_mid_run_stops_the_run(tmp_path: Path) -> None:
    slow = 'ps -o pgid= -p $$ > "$MARKS/pgid"; sleep 30 & echo $! > "$MARKS/children"; sleep 30'
    text = (
        f"source = \"src\"\n{marks(tmp_path)}[checks.functional]\ncases = ['{slow}', 'echo next']\n"
    )
    with real_server(tmp_path, text, 2) as url, httpx.Client(base_url=url) as client:
        assert client.get("/v1/health").json() == {"status": "ok", "difficulty": 2}
        with pytest.raises(httpx.ReadTimeout):
            client.post("/v1/checks/functional/cases/0/run", timeout=httpx.Timeout(5, read=1.0))
        gone_at = time.monotonic()
        pgid = int((tmp_path / "marks" / "pgid").read_text())
        assert (tmp_path / "marks" / "children").read_text().strip()  # the child had started
        latency = wait_group_gone(pgid, gone_at)
        print(f"disconnect: group live-free {latency:.3f}s after the client went away")
        response = client.post("/v1/checks/functional/cases/1/run", timeout=10)
        assert response.status_code == 200
        answer = response.json()
        assert (answer["passed"], answer["exit_code"]) == (True, 0)
        assert client.get(f"/v1/logs/{answer['log_id']}").content == b"next\n"


def test_a_queued_run_whose_client_goes_away_never_starts(tmp_path: Path) -> None:
    first = 'echo first >> "$MARKS/ran"; sleep 1.5'
    second = 'echo second >> "$MARKS/ran"'
    text = (
        f"source = \"src\"\n{marks(tmp_path)}[checks.functional]\ncases = ['{first}', '{second}']\n"
    )
    with real_server(tmp_path, text, 2) as url:

        async def main() -> int:
            async with httpx.AsyncClient(base_url=url) as client:
                running = asyncio.create_task(client.post("/v1/checks/functional/cases/0/run"))
                await asyncio.sleep(0.3)
                with pytest.raises(httpx.ReadTimeout):
                    await client.post(
                        "/v1/checks/functional/cases/1/run", timeout=httpx.Timeout(5, read=0.3)
                    )
                return (await running).status_code

        assert asyncio.run(main()) == 200
        time.sleep(0.3)
    assert (tmp_path / "marks" / "ran").read_text() == "first\n"


def test_a_call_runs_on_the_tree_of_its_start_and_a_bare_run_on_the_tree_as_it_is(
    tmp_path: Path,
) -> None:
    """POST /v1/calls takes the tree once; a run naming the call runs on it, however the tree
    changed since (which GET /v1/calls/{id} says); a run naming none takes the tree as it is
    now (the route's meaning before calls), which ends the call."""
    text = 'source = "src"\n[checks.build]\nrun = "cat value.txt"\n'
    value = tmp_path / "src" / "value.txt"

    async def job(client: httpx.AsyncClient) -> list[Any]:
        value.write_text("v1\n")
        begun = await client.post("/v1/calls", json={"checks": ["build"]})
        call = begun.json()["call"]
        before = (await client.get(f"/v1/calls/{call}")).json()
        value.write_text("v2\n")
        after = (await client.get(f"/v1/calls/{call}")).json()
        in_call = await client.post(f"/v1/checks/build/cases/0/run?call={call}")
        log = await client.get(f"/v1/logs/{in_call.json()['log_id']}")
        _, bare_log = await _run_and_log(client, "build", 0)
        stale = await client.post(f"/v1/checks/build/cases/0/run?call={call}")
        stale_state = await client.get(f"/v1/calls/{call}")
        return [
            begun.json()["checks"], before, after, log.content, bare_log,
            (stale.status_code, stale.json()), (stale_state.status_code, stale_state.json()),
        ]  # fmt: skip

    (tmp_path / "src").mkdir()
    got = run_app(tmp_path, 2, job, text=text)
    over = {"error": f"call {got[1]['call']} is over: another call began since"}
    assert got == [
        [{"key": "build", "name": "build", "cases": 1, "timeout": 3600.0}],
        {"call": got[1]["call"], "changed": False},
        {"call": got[1]["call"], "changed": True},
        b"v1\n",
        b"v2\n",
        (409, over),
        (409, over),
    ]


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"checks": ["build", "pocs"]}, 403, "PoCs: not available at difficulty level 2"),
        ({"checks": ["lint"]}, 404, "no check 'lint'"),
        ({"checks": "build"}, 400, 'the body must be {"checks": [check keys, in order]}'),
    ],
)
def test_a_call_refused(tmp_path: Path, body: Any, status: int, error: str) -> None:
    async def job(client: httpx.AsyncClient) -> tuple[int, Any]:
        answer = await client.post("/v1/calls", json=body)
        return answer.status_code, answer.json()

    assert run_app(tmp_path, 2, job) == (status, {"error": error})
