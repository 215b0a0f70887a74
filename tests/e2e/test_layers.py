"""Meta-tests of the layers that need a fresh interpreter (the rest are in
tests/unit/test_layers.py)."""

from __future__ import annotations


def test_the_case_supervisor_loads_no_pydantic_at_run_time() -> None:
    """Every fork of the supervisor copies what it loaded (15 MB, not 26, without pydantic)."""
    import subprocess
    import sys

    probe = (
        "import sys, ssebench.daemon.confine.supervisor, ssebench.daemon.confine.probe; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pydantic', 'httpx', 'starlette', 'fastmcp')))"
    )
    done = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr
