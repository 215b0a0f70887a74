"""What `serve` does to start sooner (bench/startup.py) keeps its promises: the probe case runs
while the server's modules load, yet ends (and leaves nothing) before anything is served, and
a command loads only its own family's modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ssebench.core.cli.requests import Basis
from ssebench.core.cli.root import Root
from ssebench.core.daemons.door import available, choose_isolation, start_isolation
from ssebench.core.errors import ConfigError
from ssebench.daemon.confine.user import case_user
from ssebench.daemon.guard import private_parent
from ssebench.testing.servers import clean_env, free_port, ssebench_argv

pytestmark = pytest.mark.timeout(120)

CONFINED = available(case_user())
needs_a_mechanism = pytest.mark.skipif(not CONFINED, reason="no isolation mechanism works here")


def probe_folders() -> set[Path]:
    return set(private_parent().glob("ssebench-probe-*"))


def a_task(tmp: Path) -> Path:
    (tmp / "task" / "src").mkdir(parents=True)
    (tmp / "task" / "task.toml").write_text('source = "src"\n[checks.build]\nrun = "true"\n')
    return tmp / "task"


@needs_a_mechanism
def test_the_probe_case_runs_while_the_caller_goes_on() -> None:
    before = probe_folders()
    finish = start_isolation("auto")
    assert len(probe_folders() - before) == 1  # started, not yet judged
    assert finish() == choose_isolation("auto")
    assert probe_folders() == before


@needs_a_mechanism
def test_a_failure_while_proving_ends_the_probe_and_is_the_one_told(tmp_path: Path) -> None:
    root = Root(Basis(task=a_task(tmp_path)))
    before = probe_folders()
    with pytest.raises(RuntimeError, match=r"^the imports failed$"), root.proving():
        assert len(probe_folders() - before) == 1
        raise RuntimeError("the imports failed")
    assert probe_folders() == before


def test_proving_a_mechanism_that_does_not_exist_is_refused_on_the_way_in(
    tmp_path: Path,
) -> None:
    root = Root(Basis(task=a_task(tmp_path), isolation="chroot"))
    entered = False
    refused = pytest.raises(ConfigError, match=r"^unknown isolation mechanism 'chroot'$")
    with refused, root.proving():
        entered = True
    assert not entered


def test_a_probe_case_that_fails_stops_serve_in_one_line(tmp_path: Path) -> None:
    """The probe case is judged after the server's modules load: its failure is still the one
    line, and serve says nothing else (no isolation, no address)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text('#!/bin/sh\necho "bwrap: no namespaces here" >&2\nexit 1\n')
    (fake / "bwrap").chmod(0o755)
    env = clean_env(tmp_path)
    env["PATH"] = f"{fake}:{env['PATH']}"
    port = free_port()
    args = ("serve", "--task", str(a_task(tmp_path)), "--isolation", "bubblewrap")
    argv = ssebench_argv(*args, "--port", str(port), "--daemon-port", str(free_port()))
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert (done.returncode, done.stderr) == (
        2,
        "ssebench: error: bubblewrap cannot isolate cases here: a probe case failed: "
        "bwrap: no namespaces here\n",
    )


def test_a_command_loads_only_its_own_familys_modules() -> None:
    """`mcp-config` is of serve's family: grading's verdicts, the importers and the clients of
    other daemons (httpx) stay out of serve's start-up."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print(sorted(m for m, loaded in sys.modules.items() if loaded "
        "and (m.split('.')[0] == 'httpx' or m in ('ssebench.evaluate.verdicts', "
        "'ssebench.evaluate.importers.common', 'ssebench.core.daemons.connect', "
        "'ssebench.core.cli.grading'))), file=sys.stderr))\n"
        "from ssebench.core.cli import main\n"
        "main(['mcp-config', 'claude'])\n"
    )
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "[]\n")
    assert done.stdout.startswith("claude mcp add ssebench http://localhost:3000/mcp")


def test_serve_answers_a_call_without_loading_the_evaluator(tmp_path: Path) -> None:
    """test_patch's whole path, a real call over MCP included, loads nothing of evaluate/."""
    from ssebench.testing.calls import call
    from ssebench.testing.servers import start_server

    prelude = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('evaluator modules:', sorted(m for m in sys.modules "
        "if m.startswith('ssebench.evaluate')), file=sys.stderr, flush=True))"
    )
    task = a_task(tmp_path)
    server = start_server(tmp_path, ["--task", str(task), "--difficulty", "0"], prelude=prelude)
    try:
        report = call(server.url)
    finally:
        server.stop()
    assert report.startswith("test_patch result: every check passed.")
    assert "evaluator modules: []" in server.log.read_text().splitlines()
