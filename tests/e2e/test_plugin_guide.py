"""docs/plugins.md as a reader follows it: the package built from the page's own blocks, installed
with pip, its tests run through the testing kit, and what the page says ssebench prints is what
it prints. The page's files are also the example package's (examples/plugins/ssebench-lint)."""

from __future__ import annotations

import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from ssebench.core.daemons.door import load_task
from ssebench.core.errors import ConfigError
from ssebench.core.registry import build_registry
from ssebench.testing import task_toml

from .test_third_party import PLUGIN, ROOT, environ, pip_install, ssebench

GUIDE = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.M | re.S)
MODULE = "`ssebench-lint/ssebench_lint/__init__.py`:"  # the label above the module's block


def block_after(label: str) -> str:
    """The body of the first fenced block that follows `label` in the page."""
    found = FENCE.search(GUIDE, GUIDE.index(label) + len(label))
    assert found is not None, label
    return found.group(2)


def guide_module() -> types.ModuleType:
    """The page's `ssebench_lint/__init__.py`, made a module in this process."""
    module = types.ModuleType("ssebench_lint")
    exec(compile(block_after(MODULE), "ssebench_lint", "exec"), vars(module))
    return module


@pytest.fixture(scope="module")
def guide_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package of the page's section 1, written from its blocks and installed by pip."""
    work = tmp_path_factory.mktemp("guide")
    package = work / "ssebench-lint"
    files = {
        "pyproject.toml": block_after("`ssebench-lint/pyproject.toml`:"),
        "ssebench_lint/__init__.py": block_after(MODULE),
        "tests/test_lint.py": block_after("`ssebench-lint/tests/test_lint.py`:"),
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    return pip_install(package, work / "site")


def test_the_page_shows_the_example_package_as_it_is() -> None:
    for name in ("pyproject.toml", "ssebench_lint/__init__.py"):
        assert block_after(f"`ssebench-lint/{name}`:") == (PLUGIN / name).read_text(), name


def test_the_pages_tests_pass_with_the_testing_kit(guide_site: Path, tmp_path: Path) -> None:
    tests = guide_site.parent / "ssebench-lint" / "tests"
    pytest_run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)]
    # Run from elsewhere, so that the installed module is imported, not the folder beside it.
    done = subprocess.run(pytest_run, capture_output=True, text=True, env=environ(guide_site),
                          cwd=tmp_path, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("4 passed")


def test_ssebench_plugins_prints_the_pages_table(guide_site: Path, tmp_path: Path) -> None:
    [(status, out, err)] = ssebench(["plugins"], site=guide_site, work=tmp_path)
    assert (status, err) == (0, "")
    assert out == block_after("```sh\nssebench plugins\n```")


def test_ssebench_check_prints_the_pages_report(guide_site: Path, tmp_path: Path) -> None:
    """Section 5's task: a build and functional tests that pass, a linter that warns."""
    (tmp_path / "task" / "src").mkdir(parents=True)
    checks = {"build": "true", "lint": "echo 'main.c:3: warning: unused x'", "functional": "true"}
    (tmp_path / "task" / "task.toml").write_text(task_toml(checks))
    command = ["check", "--task", str(tmp_path / "task"), "--difficulty", "2", "--quiet"]
    [(status, out, err)] = ssebench(command, site=guide_site, work=tmp_path)
    assert (status, err) == (1, "")
    assert out == block_after("ssebench check --task path/to/task --difficulty 2\n```")


def test_the_pages_task_table_loads_with_its_options(tmp_path: Path) -> None:
    module = guide_module()
    checks = build_registry(plugins=[module], use_entry_points=False).checks
    table = block_after("A task then uses the check like any other:")
    (tmp_path / "lint-rules").write_text("")
    (tmp_path / "task.toml").write_text(f'source = "src"\n\n{table}')
    (tmp_path / "src").mkdir()
    lint = load_task(tmp_path, checks).checks["lint"]
    assert (lint.cases, lint.timeout) == (("make lint",), 300)
    assert lint.files == (tmp_path / "lint-rules",)
    assert lint.options_of(0) == module.LintOptions(fail_on="warning:|error:")


def test_a_bad_fail_on_is_the_line_the_page_shows(tmp_path: Path) -> None:
    checks = build_registry(plugins=[guide_module()], use_entry_points=False).checks
    (tmp_path / "src").mkdir()
    (tmp_path / "task.toml").write_text(task_toml({"lint": {"run": "true", "fail_on": "("}}))
    with pytest.raises(ConfigError) as refused:
        load_task(tmp_path, checks)
    shown = str(refused.value).replace(str(tmp_path), "/path/to/task")
    assert f"ssebench: error: {shown}\n" in GUIDE
