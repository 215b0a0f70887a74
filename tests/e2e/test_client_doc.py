"""docs/clients.md's Python client, as the page shows it, against a real `ssebench serve`: it
runs on the MCP SDK ssebench installs (2.x), prints exactly the report `ssebench check`
prints, and every progress notification the call sent, in order, up to `finished`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ssebench.testing.servers import check_text, clean_env, serving

from .tasks import make_task

pytestmark = pytest.mark.timeout(120)
PAGE = Path(__file__).resolve().parents[2] / "docs" / "clients.md"


def snippet() -> str:
    """The page's one Python block."""
    (code,) = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    return str(code)


def test_the_documented_client_calls_test_patch(tmp_path: Path) -> None:
    script = tmp_path / "test_patch.py"
    script.write_text(snippet())
    task = make_task(tmp_path / "task", "failing")
    env = clean_env(tmp_path)
    with serving(tmp_path, task, 0, env=env) as server:
        done = subprocess.run([sys.executable, str(script), server.url], env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == check_text(task, 0, env) + "\n"
    total = "7.0"  # a case per command (1 build, 3 PoCs, 1 intent, 1 functional) and the report
    assert done.stderr.splitlines() == [
        f"test_patch: build: started (0.00 of {total})",
        f"test_patch: build: passed (1.00 of {total})",
        f"test_patch: PoCs: started (1.50 of {total})",
        f"test_patch: PoCs: case 1 of 3 started (1.67 of {total})",
        f"test_patch: PoCs: case 1 of 3 passed (2.00 of {total})",
        f"test_patch: PoCs: case 2 of 3 started (2.50 of {total})",
        f"test_patch: PoCs: case 2 of 3 FAILED (3.00 of {total})",
        f"test_patch: PoCs: FAILED (3.50 of {total})",
        f"test_patch: intent tests: started (3.67 of {total})",
        f"test_patch: intent tests: FAILED (4.00 of {total})",
        f"test_patch: functional tests: started (4.50 of {total})",
        f"test_patch: functional tests: FAILED (5.00 of {total})",
        "test_patch: finished (7.00 of 7.0)",
    ]


def test_the_page_shows_the_sdk_that_is_installed() -> None:
    """The snippet's API is 2.x's: `Client` exists, the 1.x entry point does not."""
    from importlib.metadata import version

    import mcp
    import mcp.client.streamable_http as streamable

    assert int(version("mcp").split(".")[0]) >= 2
    assert hasattr(mcp, "Client") and not hasattr(streamable, "streamablehttp_client")
    assert "from mcp import Client" in snippet()
