"""The scripts and the README's quickstart as a new user runs them: `scripts/venv.sh` sourced in
an interactive shell changes none of its options, the quickstart runs twice in a row and leaves
nothing behind, and `serve-example.sh` removes its scratch copy when stopped."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ssebench.testing.servers import (
    Server,
    clean_env,
    free_port,
    port_is_free,
    start_child,
    wait_healthy,
)

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.prefix)
SHELL_STATE = 'state() { set +o; shopt -p; echo "$-"; }'


@pytest.fixture
def venv_env(tmp_path: Path) -> dict[str, str]:
    """This test run's venv for the scripts, which then install nothing (as venv.sh made it)."""
    stamp = VENV / ".installed"
    if not stamp.exists() or stamp.stat().st_mtime < (ROOT / "pyproject.toml").stat().st_mtime:
        pytest.skip(f"{VENV} was not installed by scripts/venv.sh, so sourcing it would install")
    (tmp_path / "tmp").mkdir()
    return clean_env(tmp_path, SSEBENCH_VENV=str(VENV), TMPDIR=str(tmp_path / "tmp"))


def interactive(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`script` typed into an interactive bash, as a user would (no rc files)."""
    return subprocess.run(
        ["bash", "--norc", "--noprofile", "-i"],
        input=script,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def test_sourcing_venv_sh_leaves_the_shell_as_it_was(venv_env: dict[str, str]) -> None:
    script = f"""{SHELL_STATE}
before="$(state)"
source scripts/venv.sh
echo "sourced: $?"
[ "$before" = "$(state)" ] && echo "options unchanged"
ssebench --version
false
echo "still here after exit status $?"
"""
    done = interactive(script, venv_env)
    assert done.stdout.splitlines() == [
        "sourced: 0",
        "options unchanged",
        "ssebench 0.1.0",
        "still here after exit status 1",
    ], done.stderr


def test_a_failing_venv_sh_returns_instead_of_closing_the_shell(
    venv_env: dict[str, str], tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = {**venv_env, "SSEBENCH_VENV": str(blocker / "venv")}  # cannot be made
    script = f"""{SHELL_STATE}
before="$(state)"
source scripts/venv.sh
echo "sourced: $?"
[ "$before" = "$(state)" ] && echo "options unchanged"
"""
    done = interactive(script, env)
    assert done.stdout.splitlines() == ["sourced: 1", "options unchanged"], done.stderr


def quickstart() -> str:
    """The README's "Try it without MCP" block, as written there."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Try it without MCP") :]
    start = section.index("```sh\n") + len("```sh\n")
    return section[start : section.index("```", start)]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="the C example needs gcc")
def test_the_quickstart_runs_twice_and_leaves_nothing_behind(venv_env: dict[str, str]) -> None:
    before = _git_status()
    for _ in range(2):
        done = subprocess.run(
            ["bash"], input=quickstart(), capture_output=True, text=True, cwd=ROOT,
            env=venv_env, timeout=240,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        headlines = [line for line in done.stdout.splitlines() if line.startswith("test_patch")]
        assert headlines == [
            "test_patch result: FAILED. At least one proof-of-concept (PoC) still triggers the "
            "vulnerability. Please reassess your patch and make sure it fixes the root cause of "
            "the vulnerability.",
            "test_patch result: every check passed.",
        ]
        assert '  "resolved": true,' in done.stdout.splitlines()
        assert "Reversed" not in done.stdout + done.stderr
        assert os.listdir(venv_env["TMPDIR"]) == []
        assert not Path(venv_env["MCP_LOG_DIR"]).exists()
    assert _git_status() == before


def _git_status() -> str:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return ""
    return subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "examples"],
        capture_output=True, text=True, cwd=ROOT, check=True,
    ).stdout  # fmt: skip


@pytest.mark.parametrize("stop", ["TERM to the script", "Ctrl-C"])
def test_serve_example_removes_its_scratch_copy(
    venv_env: dict[str, str], tmp_path: Path, stop: str
) -> None:
    port, daemon_port = free_port(), free_port()
    ports = ["--port", str(port), "--daemon-port", str(daemon_port)]
    log = tmp_path / "serve-example.log"
    with log.open("wb") as out:
        proc = start_child(
            ["bash", "scripts/serve-example.sh", *ports],
            cwd=ROOT, env=venv_env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, as a terminal gives it
        )  # fmt: skip
    try:
        wait_healthy(Server(proc, port, daemon_port, log), limit=60)
        made = os.listdir(venv_env["TMPDIR"])  # the scratch copy, and the daemon's spool
        assert [name for name in made if name.startswith("ssebench-example-")], made
        if stop == "Ctrl-C":
            os.killpg(proc.pid, signal.SIGINT)  # the terminal signals the whole group
        else:
            proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert os.listdir(venv_env["TMPDIR"]) == []
    assert port_is_free(port) and port_is_free(daemon_port)
