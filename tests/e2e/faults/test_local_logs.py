"""Whichever source a daemon hands over, a failed check's log gives one report and one saved log.

One driver reads the sources: the spool of the case service in the same process (a file here:
saved by a hard link or a kernel copy), or the same log over HTTP from a daemon in another
process (sidecar mode: its head and end by Range requests, the whole as one stream). Logs that
could go wrong at the seams: a log cut across two failed cases, a UTF-8 character split
between them, one case's log alone (linked), a short log (shown whole, nothing saved), random
bytes.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import httpx
import pytest
from daemon_app import create_app

from ssebench.core.daemons.door import ServiceConfig
from ssebench.core.daemons.inprocess import open_service
from ssebench.core.daemons.native import HttpDaemon
from ssebench.core.orchestrator import run_test_patch
from ssebench.core.registry import build_registry
from ssebench.daemon.task import load_task
from ssebench.testing.servers import serving_app, write_task

# Level 0, the build passes, intent tests fail, so the functional tests run; theirs is the
# headline's log: every failed case's output, in order.
LOGS = {
    "two long cases": ["seq 1 9000; exit 1", "seq 9001 20000; exit 1"],
    "a character split across cases": [
        "yes w | head -n 6000; printf '\\342\\202'; exit 1",
        "printf '\\254 euro\\n'; yes v | head -n 6000; exit 1",
    ],
    "one long case": ["true", "yes 'many words here' | head -n 5000; exit 1"],
    "short": ["echo one; exit 1", "echo two; exit 1"],
    "random bytes": ["cat data; exit 1", "true"],
}


def _report(task: Path, log_dir: Path, spool: Path, local: bool) -> str:
    registry = build_registry()

    loaded = load_task(task, registry.checks)

    async def embedded() -> str:
        service = open_service(ServiceConfig(loaded, registry, 0, spool=spool))
        try:
            return await run_test_patch(registry.checks, 0, service, log_dir)
        finally:
            service.close()

    async def sidecar(url: str) -> str:
        with httpx.Client(base_url=url) as logs:
            async with httpx.AsyncClient(base_url=url) as client:
                return await run_test_patch(registry.checks, 0, HttpDaemon(client, logs), log_dir)

    if local:
        return asyncio.run(embedded())
    with serving_app(create_app(loaded, registry, 0, spool=spool), log_level="critical") as url:
        return asyncio.run(sidecar(url))


@pytest.mark.parametrize("kind", list(LOGS))
def test_a_file_here_and_a_log_over_http_give_one_report(tmp_path: Path, kind: str) -> None:
    cases = ", ".join(f"'''{case}'''" for case in LOGS[kind])
    task = write_task(
        tmp_path / "task",
        "[checks.build]\nrun = 'true'\n[checks.intent]\nrun = 'exit 1'\n"
        f"[checks.functional]\ncases = [{cases}]\n",
    )
    # Random bytes (NUL, invalid UTF-8, few line breaks), the same for both runs.
    (task / "src" / "data").write_bytes(random.Random(kind).randbytes(300_000))
    texts, saved, links = [], [], []
    for local in (False, True):
        log_dir = tmp_path / f"logs-{local}"
        spool = tmp_path / f"spool-{local}"
        spool.mkdir()
        text = _report(task, log_dir, spool, local)
        files = sorted(log_dir.iterdir()) if log_dir.exists() else []
        saved.append([f.read_bytes() for f in files])
        links.append([f.stat().st_nlink for f in files])
        for file in files:
            text = text.replace(str(file), "<saved>")
        texts.append(text)
    assert texts[0].startswith("test_patch result: FAILED. One or more functionality test(s)")
    assert texts[1] == texts[0]
    assert saved[1] == saved[0]
    assert len(saved[0]) == (0 if kind == "short" else 1)
    # The local way really ran: a single failed case's log is a link to the daemon's spool.
    single = kind in ("one long case", "random bytes")
    assert links == ([[1], [2]] if single else [[1] * len(saved[0])] * 2)
