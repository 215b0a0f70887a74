"""Meta-tests (after datasette's): every hook documented, every built-in and subpackage declared,
files and functions of a readable size, no test that stops processes by name (tests/e2e/
test_meta.py imports in a fresh interpreter: nothing done at import time, no transport in the
domain)."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
import re
import tomllib
from pathlib import Path

import ssebench.core
from ssebench.core import check, hookspecs
from ssebench.core.registry import ENTRY_POINT_GROUP

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PACKAGE_DIRS: dict[str, str] = PYPROJECT["tool"]["setuptools"]["package-dir"]
MAX_FILE_LINES = 300
MAX_FUNCTION_LINES = 50


def builtin_modules() -> set[str]:
    """Every plugin folder in the checkout, as the module it installs as."""
    return {
        f"ssebench.plugins.{folder.name}"
        for folder in (ROOT / "plugins").iterdir()
        if (folder / "__init__.py").is_file()
    }


def _hookspecs() -> dict[str, object]:
    marker = f"{hookspecs.PROJECT}_spec"
    return {name: obj for name, obj in vars(hookspecs).items() if hasattr(obj, marker)}


def test_the_hookspecs_are_the_ones_we_know() -> None:
    assert list(_hookspecs()) == ["ssebench_checks"]


def test_every_hookspec_has_a_docstring() -> None:
    undocumented = [name for name, spec in _hookspecs().items() if not inspect.getdoc(spec)]
    assert undocumented == []


def test_every_hookspec_is_implemented_by_a_builtin() -> None:
    marker = f"{hookspecs.PROJECT}_impl"
    implemented = {
        name
        for module in builtin_modules()
        for name, obj in vars(importlib.import_module(module)).items()
        if hasattr(obj, marker)
    }
    assert implemented == set(_hookspecs())


def test_the_builtin_folders_are_the_four_checks() -> None:
    assert builtin_modules() == {
        "ssebench.plugins.build",
        "ssebench.plugins.poc",
        "ssebench.plugins.intent",
        "ssebench.plugins.functional",
    }


def test_every_builtin_is_an_entry_point_and_every_entry_point_a_builtin() -> None:
    declared = PYPROJECT["project"]["entry-points"][ENTRY_POINT_GROUP]
    assert set(declared.values()) == builtin_modules()
    assert declared == {
        "build": "ssebench.plugins.build",
        "pocs": "ssebench.plugins.poc",
        "intent": "ssebench.plugins.intent",
        "functional": "ssebench.plugins.functional",
    }


def test_every_builtin_is_a_listed_package() -> None:
    assert builtin_modules() <= set(PYPROJECT["tool"]["setuptools"]["packages"])


def test_the_entry_point_name_is_the_check_key() -> None:
    declared = PYPROJECT["project"]["entry-points"][ENTRY_POINT_GROUP]
    keys = {
        name: [c.key for c in importlib.import_module(module).ssebench_checks()]
        for name, module in declared.items()
    }
    assert keys == {name: [name] for name in declared}


def test_the_installed_metadata_matches_pyproject() -> None:
    # A stale install (pyproject changed, not reinstalled) would test other plugins than these.
    installed = {
        ep.name: ep.value
        for ep in importlib.metadata.distribution("ssebench").entry_points
        if ep.group == ENTRY_POINT_GROUP
    }
    assert installed == PYPROJECT["project"]["entry-points"][ENTRY_POINT_GROUP]


def test_a_plugin_needs_only_ssebench_core() -> None:
    assert ssebench.core.Check is check.Check
    assert ssebench.core.hookimpl is hookspecs.hookimpl
    for module in builtin_modules():
        source = inspect.getsource(importlib.import_module(module))
        internal = [line for line in source.splitlines() if "ssebench.core." in line]
        assert internal == [], module


def test_every_subpackage_is_a_listed_package() -> None:
    """An editable install finds a subpackage missing from `packages`; a wheel leaves it out
    (test_packaging's wheel install proves it for real)."""
    on_disk = {
        ".".join([package, *init.parent.relative_to(ROOT / folder).parts])
        for package, folder in PACKAGE_DIRS.items()
        for init in (ROOT / folder).rglob("__init__.py")
    }
    assert len(on_disk) >= 11
    assert on_disk == set(PYPROJECT["tool"]["setuptools"]["packages"])


def oversized(source: str, name: str) -> list[str]:
    """Where `source` breaks the size rule: over 300 lines, or a function over 50."""
    found = []
    lines = len(source.splitlines())
    if lines > MAX_FILE_LINES:
        found.append(f"{name}: {lines} lines")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{name}:{node.lineno}: {node.name}() is {length} lines")
    return found


def test_no_file_over_300_lines_and_no_function_over_50() -> None:
    sources = sorted(
        path for folder in PACKAGE_DIRS.values() for path in (ROOT / folder).rglob("*.py")
    )
    assert len(sources) > 30
    found = [
        problem
        for path in sources
        for problem in oversized(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert found == []


def test_the_size_rule_finds_a_long_file_and_long_functions() -> None:
    body = "    x = 1\n"
    assert oversized("x = 1\n" * 300, "f.py") == []
    assert oversized("x = 1\n" * 301, "f.py") == ["f.py: 301 lines"]
    assert oversized("def f():\n" + body * 49, "f.py") == []
    assert oversized("def f():\n" + body * 50, "f.py") == ["f.py:1: f() is 51 lines"]
    method = "class C:\n    async def run(self):\n" + "        x = 1\n" * 50
    assert oversized(method, "c.py") == ["c.py:2: run() is 51 lines"]


# Stopping processes by name or pattern: pkill, killall, or pids from pgrep or pidof handed to
# kill. The machine is shared (other suites, other engineers' runs): a test, a benchmark or a
# script ends only what it started, by its id. (This file names them to refuse them.)
BY_NAME = re.compile(
    r"\b(?:pkill|killall)\b"
    r"|\b(?:pgrep|pidof)\b[^\n]*\|\s*xargs\b[^\n]*\bkill\b"
    r"|\bkill\b[^\n]*(?:\$\(|`)\s*(?:pgrep|pidof)\b"
)
GOOD_CITIZENS = ("tests", "bench", "scripts")


def kills_by_name(root: Path) -> list[str]:
    """Each line of a file under `root`'s tests/, bench/ and scripts/ that stops processes by
    name or pattern (this file aside)."""
    found = []
    for folder in GOOD_CITIZENS:
        for path in sorted((root / folder).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path == Path(__file__):
                continue
            text = path.read_bytes().decode("utf-8", "replace")
            for number, line in enumerate(text.splitlines(), 1):
                if BY_NAME.search(line):
                    found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_no_test_benchmark_or_script_stops_a_process_by_name() -> None:
    assert sum(1 for folder in GOOD_CITIZENS for _ in (ROOT / folder).rglob("*.py")) > 100
    assert kills_by_name(ROOT) == []


def test_the_rule_finds_a_planted_pkill_and_lets_kill_by_pid_be(tmp_path: Path) -> None:
    planted = {
        "tests/e2e/test_bad.py": "os.system(\"pkill -9 -x -f 'sleep 30'\")\n",
        "tests/e2e/security/attack.py": "RIG = \"sh -c 'while :; do pkill -9 -x rle; done'\"\n",
        "bench/clean.sh": "killall -q ssebench\n",
        "scripts/stop.sh": "pgrep -f 'ssebench serve' | xargs -r kill -9\nkill $(pidof bwrap)\n",
    }
    fine = {
        "tests/e2e/test_fine.py": "os.kill(pid, signal.SIGKILL)\nkill_leftovers()\n",
        "scripts/fine.sh": "pgrep -f 'sleep 31[0-3]' >> pids\nkill -9 \"$pid\"\n",
    }
    for name, text in {**planted, **fine}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert kills_by_name(tmp_path) == [
        "tests/e2e/security/attack.py:1: RIG = \"sh -c 'while :; do pkill -9 -x rle; done'\"",
        "tests/e2e/test_bad.py:1: os.system(\"pkill -9 -x -f 'sleep 30'\")",
        "bench/clean.sh:1: killall -q ssebench",
        "scripts/stop.sh:1: pgrep -f 'ssebench serve' | xargs -r kill -9",
        "scripts/stop.sh:2: kill $(pidof bwrap)",
    ]
