"""A regular (not editable) install of the wheel: an editable install forgives a subpackage
missing from `packages` or a file git does not ship, a wheel does not.

The wheel is built offline from the files a clone would have, installed into a fresh venv, and
run from outside the checkout. The venv borrows the test environment's dependencies through a
.pth line, which adds the folder without running the editable install's own .pth hook.
"""

from __future__ import annotations

import configparser
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]
PACKAGE_DIRS = {
    "core": "core",
    "daemon": "daemon",
    "evaluate": "evaluate",
    "plugins": "plugins",
    "testing": "testing",
}


def _run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def shipped_files() -> list[str]:
    """What a clone has: tracked files and new ones git does not ignore."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):  # not a checkout: take the tree as it is
        skip = {".git", ".venv", "build", "dist", "__pycache__", ".pytest_cache"}
        return [
            str(path.relative_to(ROOT))
            for path in ROOT.rglob("*")
            if path.is_file() and not skip & set(path.relative_to(ROOT).parts)
        ]
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def test_git_ships_every_module() -> None:
    # An ignore pattern such as `build/` would drop plugins/build from every clone.
    shipped = set(shipped_files())
    modules = {
        str(path.relative_to(ROOT))
        for folder in PACKAGE_DIRS.values()
        for path in (ROOT / folder).rglob("*.py")
    }
    assert sorted(modules - shipped) == []


def _offline_build_backend() -> None:
    """Without build isolation the test environment's setuptools builds the wheel."""
    version = tuple(int(part) for part in importlib.metadata.version("setuptools").split(".")[:2])
    if version < (70, 1):
        pytest.fail(
            "building the wheel offline needs setuptools>=70.1 (it has bdist_wheel built in) "
            f"in the test environment; it has {'.'.join(map(str, version))}"
        )


@pytest.fixture(scope="module")
def packaging(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    _offline_build_backend()
    work = tmp_path_factory.mktemp("packaging")
    source = work / "source"
    for name in shipped_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    offline = ["--no-index", "--no-deps"]
    _run(*pip, "wheel", *offline, "--no-build-isolation", "-w", work / "dist", source, cwd=work)
    (wheel,) = (work / "dist").glob("ssebench-*.whl")
    venv = work / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=work)
    python = venv / "bin" / "python"
    _run(*pip, "--python", python, "install", *offline, "--no-compile", wheel, cwd=work)
    site = Path(
        _run(
            python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=work
        ).strip()
    )
    deps = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    (site / "_ssebench_test_deps.pth").write_text("".join(f"{path}\n" for path in sorted(deps)))
    return {"work": work, "wheel": wheel, "venv": venv, "site": site}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def test_the_wheel_holds_only_the_ssebench_namespace(packaging: dict[str, Path]) -> None:
    with zipfile.ZipFile(packaging["wheel"]) as wheel:
        names = wheel.namelist()
    assert {name.split("/")[0] for name in names} == {
        "ssebench",
        f"ssebench-{VERSION}.dist-info",
    }
    modules = {name for name in names if name.endswith(".py")}
    expected = {
        f"ssebench/{package}/{path.relative_to(ROOT / folder)}"
        for package, folder in PACKAGE_DIRS.items()
        for path in (ROOT / folder).rglob("*.py")
    }
    assert modules == expected


def test_the_wheel_declares_the_checks_the_script_and_the_pytest_plugin(
    packaging: dict[str, Path],
) -> None:
    with zipfile.ZipFile(packaging["wheel"]) as wheel:
        text = wheel.read(f"ssebench-{VERSION}.dist-info/entry_points.txt").decode()
    parser = configparser.ConfigParser()
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    assert {section: dict(parser[section]) for section in parser.sections()} == {
        "console_scripts": {"ssebench": "ssebench.core.cli:main"},
        "pytest11": {"ssebench": "ssebench.testing"},
        "ssebench.checks": {
            "build": "ssebench.plugins.build",
            "functional": "ssebench.plugins.functional",
            "intent": "ssebench.plugins.intent",
            "pocs": "ssebench.plugins.poc",
        },
    }


def _entries(folder: Path) -> list[str]:
    return sorted(entry.name for entry in folder.iterdir() if entry.name != "__pycache__")


def test_site_packages_gets_no_bare_core_or_plugins(packaging: dict[str, Path]) -> None:
    site = packaging["site"]
    assert {entry.name for entry in site.iterdir()} == {
        "ssebench",
        f"ssebench-{VERSION}.dist-info",
        "_ssebench_test_deps.pth",
    }
    assert _entries(site / "ssebench") == [
        "core",
        "daemon",
        "evaluate",
        "plugins",
        "testing",
    ]
    assert _entries(site / "ssebench" / "plugins") == [
        "__init__.py",
        "build",
        "functional",
        "intent",
        "poc",
    ]


def test_the_installed_package_is_the_one_imported(packaging: dict[str, Path]) -> None:
    probe = (
        "import json, importlib.metadata as md\n"
        "import ssebench.core, ssebench.plugins.poc, ssebench.daemon.app, ssebench.testing\n"
        "files = [m.__file__ for m in (ssebench.core, ssebench.plugins.poc, ssebench.daemon.app,"
        " ssebench.testing)]\n"
        "print(json.dumps({'files': files, 'dist': str(md.distribution('ssebench')._path)}))\n"
    )
    python = packaging["venv"] / "bin" / "python"
    found = json.loads(_run(python, "-c", probe, cwd=packaging["work"], env=_env()))
    site = packaging["site"]
    assert found == {
        "files": [
            str(site / "ssebench" / "core" / "__init__.py"),
            str(site / "ssebench" / "plugins" / "poc" / "__init__.py"),
            str(site / "ssebench" / "daemon" / "app.py"),
            str(site / "ssebench" / "testing" / "__init__.py"),
        ],
        "dist": str(site / f"ssebench-{VERSION}.dist-info"),
    }


def test_the_installed_script_lists_the_four_checks(packaging: dict[str, Path]) -> None:
    script = packaging["venv"] / "bin" / "ssebench"
    source = f"(ssebench {VERSION})"
    assert _run(script, "plugins", cwd=packaging["work"], env=_env()) == (
        "order  check                key          levels  precedence  source\n"
        f'   10  build                build        0-3              1  "build" {source}\n'
        f'   20  PoCs                 pocs         0-1              3  "pocs" {source}\n'
        f'   30  intent tests         intent       0                4  "intent" {source}\n'
        f'   40  functional tests     functional   0-2              2  "functional" {source}\n'
    )


def test_the_installed_script_runs_a_task(packaging: dict[str, Path]) -> None:
    task = packaging["work"] / "task"
    (task / "src").mkdir(parents=True)
    (task / "task.toml").write_text(
        'source = "src"\n[checks.build]\nrun = "true"\n[checks.pocs]\ncases = ["true", "true"]\n'
        '[checks.intent]\nrun = "true"\n[checks.functional]\nrun = "false"\n'
    )
    script = packaging["venv"] / "bin" / "ssebench"
    command = (script, "check", "--task", task, "--difficulty", "0", "--quiet")
    assert _run(*command, cwd=packaging["work"], env=_env()) == (
        "test_patch result: every check passed.\n"
        "\n"
        "Checks:\n"
        "- build: passed\n"
        "- PoCs: passed (2 of 2)\n"
        "- intent tests: passed\n"
        "- functional tests: passed (covered by the intent tests)\n"
    )
