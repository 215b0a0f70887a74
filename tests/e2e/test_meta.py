"""Meta-tests that need a fresh interpreter: importing core, a plugin or the testing kit loads
no server, the domain no transport, and the helpers beside the kit need no pytest (the rest of
the meta-tests are in tests/unit/test_meta.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRANSPORT = ("httpx", "starlette", "uvicorn", "fastmcp", "mcp")


def fresh_python(probe: str, *args: str) -> str:
    """What `probe` prints in a new interpreter, which must end well and print no error."""
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert (done.returncode, done.stderr) == (0, "")
    return done.stdout


def test_imports_load_no_server_and_no_plugin() -> None:
    """Importing core or a plugin loads no plugin and no server; neither does the testing kit,
    a pytest plugin of every session where ssebench is installed."""
    probe = (
        "import json, sys\n"
        "def loaded():\n"
        "    heavy = {'fastmcp', 'mcp', 'uvicorn', 'starlette', 'httpx'}\n"
        "    return sorted({m.split('.')[0] for m in sys.modules} & heavy)\n"
        "import ssebench.core, ssebench.core.registry, ssebench.core.hookspecs\n"
        "plugins = sorted(m for m in sys.modules if m.startswith('ssebench.plugins'))\n"
        "import ssebench.plugins.build, ssebench.plugins.poc\n"
        "import ssebench.plugins.intent, ssebench.plugins.functional\n"
        "core = loaded()\n"
        "import ssebench.testing\n"
        "print(json.dumps({'plugins': plugins, 'core': core, 'kit': loaded()}))\n"
    )
    assert json.loads(fresh_python(probe)) == {"plugins": [], "core": [], "kit": []}


def domain_modules() -> list[str]:
    """The domain: the modules directly in core/, as they install."""
    return sorted(f"ssebench.core.{path.stem}" for path in (ROOT / "core").glob("*.py"))


def test_the_domain_loads_no_transport() -> None:
    """Every domain module imported in a fresh interpreter: none of them loads a transport."""
    modules = domain_modules()
    known = {"ssebench.core.check", "ssebench.core.orchestrator", "ssebench.core.report"}
    assert known <= set(modules)
    probe = (
        "import importlib, json, sys\n"
        "for name in sys.argv[1:]:\n"
        "    importlib.import_module(name)\n"
        f"loaded = {{m.split('.')[0] for m in sys.modules}} & set({TRANSPORT!r})\n"
        "print(json.dumps({'imported': sorted(set(sys.argv[1:]) & set(sys.modules)),"
        " 'transport': sorted(loaded)}))\n"
    )
    assert json.loads(fresh_python(probe, *modules)) == {"imported": modules, "transport": []}


def test_the_helpers_beside_the_kit_need_no_pytest() -> None:
    """The benchmarks import them without pytest; the kit then only lacks its fixture."""
    probe = (
        "import sys\n"
        "sys.modules['pytest'] = None  # as if it were not installed\n"
        "import ssebench.testing.servers, ssebench.testing.procs, ssebench.testing.calls\n"
        "import ssebench.testing as kit\n"
        "print(sorted(name for name in kit.__all__ if not hasattr(kit, name)))\n"
    )
    assert fresh_python(probe) == "['ssebench_task']\n"
