"""A third-party check installed next to ssebench: discovered, ordered, withheld, reported.

The example plugin (examples/plugins/ssebench-lint) is installed into a throw-away folder, never
into the venv, where it would add a lint line to every other test's report. The real CLI runs
in a subprocess with that folder on PYTHONPATH, so importlib.metadata finds its entry point.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from subprocess import PIPE

import pytest

from ssebench.daemon.sanitizers import EXIT_CODES
from ssebench.testing import task_toml
from ssebench.testing.servers import SSEBENCH

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "examples" / "plugins" / "ssebench-lint"

LINT_REASON = (
    "The lint check failed. Please fix the warnings it reports without changing the "
    "program's behaviour."
)
FUNCTIONAL_REASON = (
    "One or more functionality test(s) failed. Please reassess your patch and make sure it "
    "fixes the vulnerability without compromising the program's functionality."
)
INTENT_REASON = (
    "One or more intent test(s) failed. These tests validate behavior after the vulnerability "
    "fix. Please reassess your patch to ensure it correctly addresses the vulnerability and "
    "aligns with common patterns in the project."
)
BUILD_REASON = "The project failed to build. Please reassess the correctness of your patch."
NO_POCS = "Without the PoCs, this result does not show whether the vulnerability is fixed."
WARNING = "main.c:3: warning: unused variable 'x'"


@pytest.fixture(scope="session")
def lint_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ssebench-lint installed as pip would install it, into a folder of its own."""
    work = tmp_path_factory.mktemp("ssebench-lint")
    # Built from a copy: an in-tree build leaves build/ and *.egg-info in the repository.
    source = work / "source"
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("build", "*.egg-info", ".*"))
    return pip_install(source, work / "site")


def pip_install(source: Path, site: Path) -> Path:
    """The package at `source` installed by pip into the folder `site`, never into the venv."""
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    build = ["--no-build-isolation", "--no-index"] if _setuptools_builds_wheels() else []
    pip += ["--no-deps", *build, "--target", str(site), str(source)]
    subprocess.run(pip, check=True, timeout=300)
    return site


def _setuptools_builds_wheels() -> bool:
    """Whether the venv's setuptools can build the plugin offline (bdist_wheel is built in from
    70.1); if not, pip fetches one for an isolated build, as for any package."""
    try:
        version = importlib.metadata.version("setuptools")
    except importlib.metadata.PackageNotFoundError:
        return False
    return tuple(int(part) for part in version.split(".")[:2]) >= (70, 1)


def environ(*sites: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SSE_")}
    paths = [*map(str, sites), *filter(None, [env.get("PYTHONPATH")])]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return {**env, **extra}


def ssebench(*commands: list[str], site: Path, work: Path) -> list[tuple[int, str, str]]:
    """Run each command as its own `ssebench` process, all at once; (status, stdout, stderr)."""
    env = environ(site, MCP_LOG_DIR=str(work / "mcp-logs"))
    procs = [
        subprocess.Popen([*SSEBENCH, *args], stdout=PIPE, stderr=PIPE, text=True, env=env)
        for args in commands
    ]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        done.append((proc.returncode, out, err))
    return done


def make_task(
    where: Path,
    *,
    build: str = "true",
    intent: str = "true",
    lint: str = "true",
    functional: str = "true",
) -> Path:
    """A task with every built-in check and lint, each a shell command."""
    (where / "src").mkdir(parents=True)
    checks = {
        "build": build,
        "pocs": ["true", "true"],
        "intent": {"run": intent},
        "lint": {"run": lint, "fail_on": "warning:", "timeout": 30},
        "functional": functional,
    }
    (where / "task.toml").write_text(task_toml(checks))
    return where


def check(task: Path, *levels: int, site: Path) -> list[tuple[int, str]]:
    """`ssebench check` at each level: its exit status and report (no progress: --quiet)."""
    commands = [["check", "--task", str(task), "--difficulty", str(n), "--quiet"] for n in levels]
    done = ssebench(*commands, site=site, work=task)
    assert [err for _, _, err in done] == [""] * len(levels)
    return [(status, out.removesuffix("\n")) for status, out, _ in done]


def test_plugins_lists_it_with_its_distribution(lint_site: Path, tmp_path: Path) -> None:
    [(status, out, err)] = ssebench(["plugins"], site=lint_site, work=tmp_path)
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "order  check                key          levels  precedence  source",
        '   10  build                build        0-3              1  "build" (ssebench 0.1.0)',
        '   20  PoCs                 pocs         0-1              3  "pocs" (ssebench 0.1.0)',
        '   30  intent tests         intent       0                4  "intent" (ssebench 0.1.0)',
        '   35  lint                 lint         0-2              5  "lint" (ssebench-lint 0.1.0)',
        '   40  functional tests     functional   0-2              2  "functional" '
        "(ssebench 0.1.0)",
    ]


REPORTS = {
    0: (
        "test_patch result: every check passed.\n\n"
        "Checks:\n- build: passed\n- PoCs: passed (2 of 2)\n- intent tests: passed\n"
        "- lint: passed\n- functional tests: passed (covered by the intent tests)"
    ),
    1: (
        "test_patch result: every check that ran passed.\n\n"
        "Checks:\n- build: passed\n- PoCs: passed (2 of 2)\n- lint: passed\n"
        "- functional tests: passed\n\n"
        "Not available at difficulty level 1 (NO_INTENT_TEST): intent tests. "
        "Nothing is reported about them."
    ),
    2: (
        "test_patch result: every check that ran passed.\n\n"
        "Checks:\n- build: passed\n- lint: passed\n- functional tests: passed\n\n"
        "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. "
        f"Nothing is reported about them. {NO_POCS}"
    ),
    3: (
        "test_patch result: every check that ran passed.\n\n"
        "Checks:\n- build: passed\n\n"
        "Not available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, lint, "
        f"functional tests. Nothing is reported about them. {NO_POCS}"
    ),
    4: (
        "test_patch result: no checks ran.\n\n"
        "Not available at difficulty level 4 (NO_BUILD): build, PoCs, intent tests, lint, "
        "functional tests. Nothing is reported about them. test_patch has nothing to run at "
        "this level, so this result says nothing about your patch."
    ),
}


def test_check_reports_it_in_run_order_at_every_level(lint_site: Path, tmp_path: Path) -> None:
    reports = check(make_task(tmp_path), *REPORTS, site=lint_site)
    assert dict(zip(REPORTS, reports, strict=True)) == {n: (0, r) for n, r in REPORTS.items()}


def test_lint_failing_alone_carries_the_headline(lint_site: Path, tmp_path: Path) -> None:
    task = make_task(tmp_path, lint=f'echo "{WARNING}"')  # exit status 0, but a warning line
    assert check(task, 2, site=lint_site) == [
        (
            1,
            f"test_patch result: FAILED. {LINT_REASON}\n\n"
            "Checks:\n- build: passed\n- lint: FAILED (warnings found)\n- functional tests: passed"
            "\n\nNot available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. "
            f"Nothing is reported about them.\n\nFull log (lint):\n{WARNING}",
        )
    ]


def test_functional_tests_outrank_lint(lint_site: Path, tmp_path: Path) -> None:
    task = make_task(tmp_path, lint="echo lint broke; exit 1", functional="echo 1 failed; exit 1")
    assert check(task, 1, site=lint_site) == [
        (
            1,
            f"test_patch result: FAILED. {FUNCTIONAL_REASON}\n\n"
            "Checks:\n- build: passed\n- PoCs: passed (2 of 2)\n- lint: FAILED\n"
            "- functional tests: FAILED\n\n"
            "Not available at difficulty level 1 (NO_INTENT_TEST): intent tests. "
            "Nothing is reported about them.\n\nFull log (functional tests):\n1 failed",
        )
    ]


def test_intent_tests_outrank_lint(lint_site: Path, tmp_path: Path) -> None:
    task = make_task(tmp_path, intent="echo bounds; exit 1", lint=f'echo "{WARNING}"')
    assert check(task, 0, site=lint_site) == [
        (
            1,
            f"test_patch result: FAILED. {INTENT_REASON}\n\n"
            "Checks:\n- build: passed\n- PoCs: passed (2 of 2)\n- intent tests: FAILED\n"
            "- lint: FAILED (warnings found)\n- functional tests: passed\n\n"
            "Full log (intent tests):\nbounds",
        )
    ]


def test_the_build_gate_stops_lint_too(lint_site: Path, tmp_path: Path) -> None:
    task = make_task(tmp_path, build="echo 'cc: error'; exit 2")
    assert check(task, 2, site=lint_site) == [
        (
            1,
            f"test_patch result: FAILED. {BUILD_REASON}\n\n"
            "Checks:\n- build: FAILED\n- lint: not run (the build failed)\n"
            "- functional tests: not run (the build failed)\n\n"
            "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. "
            "Nothing is reported about them.\n\nFull log (build):\ncc: error",
        )
    ]


def test_grade_includes_it(lint_site: Path, tmp_path: Path) -> None:
    task = make_task(tmp_path, lint=f'echo "{WARNING}"')
    [(status, out, err)] = ssebench(["grade", "--task", str(task)], site=lint_site, work=tmp_path)
    assert status == 1, err
    verdict = json.loads(out)
    assert verdict["resolved"] is False
    keys = [c["key"] for c in verdict["checks"]]
    assert keys == ["build", "pocs", "intent", "lint", "functional"]
    lint = verdict["checks"][3]
    for case in lint["cases"]:
        del case["seconds"]
        assert case.pop("sanitizer_exit") in EXIT_CODES  # its own, kept for a rejudge
    assert lint == {
        "key": "lint",
        "name": "lint",
        "status": "failed",
        "detail": "warnings found",
        "cases": [
            {"index": 0, "passed": False, "exit_code": 0, "signal": None, "timed_out": False}
        ],
    }


def test_the_plugins_own_tests_pass_with_the_testing_kit(lint_site: Path, tmp_path: Path) -> None:
    """The kit (the `ssebench_task` fixture) from a test suite outside ssebench's own.

    Run from elsewhere, so the installed copy is imported and not the source folder beside it.
    """
    pytest_run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*pytest_run, str(PLUGIN / "tests")],
        capture_output=True,
        text=True,
        env=environ(lint_site),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed" in done.stdout.splitlines()[-1]


HEAD = "from ssebench.core import Check, hookimpl\n\n\n@hookimpl\ndef ssebench_checks():\n"
BROKEN = {
    "import fails": (
        "import ssebench_nothere\n",
        'Error loading plugin "bad" (ssebench-bad 0.1): '
        "ModuleNotFoundError: No module named 'ssebench_nothere'",
    ),
    "not a Check": (
        HEAD + "    return [{'name': 'lint'}]\n",
        """Plugin "bad" (ssebench-bad 0.1): returned {'name': 'lint'}, which is not a Check""",
    ),
    "a built-in's name": (
        HEAD + "    return [Check('build', 'style', 35, 2, 5)]\n",
        """Plugin "bad" (ssebench-bad 0.1): check 'build' (key 'style') clashes with 'build' """
        """(key 'build') from "build" (ssebench 0.1.0)""",
    ),
    "a built-in's key": (
        HEAD + "    return [Check('my PoCs', 'pocs', 35, 2, 5)]\n",
        """Plugin "bad" (ssebench-bad 0.1): check 'my PoCs' (key 'pocs') clashes with 'PoCs' """
        """(key 'pocs') from "pocs" (ssebench 0.1.0)""",
    ),
    "max_level 7": (
        HEAD + "    return [Check('lint', 'lint', 35, 7, 5)]\n",
        """Plugin "bad" (ssebench-bad 0.1): check 'lint': max_level 7 is not a level 0-3 """
        "(level 4 runs nothing)",
    ),
    "covered_by an unknown key": (
        HEAD + "    return [Check('lint', 'lint', 35, 2, 5, covered_by='style')]\n",
        """Plugin "bad" (ssebench-bad 0.1): check 'lint' is covered_by 'style', which no """
        "plugin provides",
    ),
    "no @hookimpl": (
        HEAD.replace("@hookimpl\n", "") + "    return [Check('lint', 'lint', 35, 2, 5)]\n",
        """Plugin "bad" (ssebench-bad 0.1): implements no ssebench_checks() hook (is it """
        "marked @hookimpl?)",
    ),
}


def install_by_hand(site: Path, module: str) -> None:
    """What pip leaves for a distribution `ssebench-bad` with entry point `bad`, made by hand."""
    site.mkdir()
    (site / "ssebench_bad.py").write_text(module)
    info = site / "ssebench_bad-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ssebench-bad\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[ssebench.checks]\nbad = ssebench_bad\n")


def test_a_broken_plugin_stops_every_command_with_one_line(tmp_path: Path) -> None:
    module, message = BROKEN["import fails"]
    install_by_hand(tmp_path / "site", module)
    task = str(make_task(tmp_path / "task"))
    commands = [["check", "--task", task, "--difficulty", "0"], ["grade", "--task", task]]
    done = ssebench(*commands, ["plugins"], site=tmp_path / "site", work=tmp_path)
    assert done == [(2, "", f"ssebench: error: {message}\n")] * 3


# Every command builds its checks the same way, so one command suffices for each problem.
@pytest.mark.parametrize("case", BROKEN)
def test_each_problem_is_one_line_naming_the_plugin(case: str, tmp_path: Path) -> None:
    module, message = BROKEN[case]
    install_by_hand(tmp_path / "site", module)
    task = str(make_task(tmp_path / "task"))
    done = ssebench(["check", "--task", task, "--quiet"], site=tmp_path / "site", work=tmp_path)
    assert done == [(2, "", f"ssebench: error: {message}\n")]
