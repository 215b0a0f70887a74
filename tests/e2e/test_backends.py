"""What `--backend docker` brings into an image, made for real without Docker: the copy of
ssebench runs on a bare interpreter through boot.py's venv and is made once
(tests/unit/test_backends.py reads a container's mounts and another Python's wheels)."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from ssebench.evaluate.backends import boot, bundle
from ssebench.testing.servers import run_ssebench


def test_the_copy_runs_ssebench_on_an_interpreter_that_has_nothing_installed(
    tmp_path: Path,
) -> None:
    made = bundle.ensure_bundle(tmp_path / "cache")
    assert bundle.ensure_bundle(tmp_path / "cache") == made  # made once
    assert [p.name for p in made.root.parent.iterdir()] == [made.root.name]  # nothing half made
    assert ("pydantic_core", metadata.version("pydantic_core")) in made.compiled
    python = boot.make_venv(str(tmp_path / "venv"), (str(made.abi(bundle.host_suffix())),
                                                     str(made.site)))  # fmt: skip
    assert os.path.realpath(python) == os.path.realpath(sys.executable)  # a bare interpreter
    done = subprocess.run(
        [python, "-I", "-m", "ssebench.core.cli", "plugins"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == run_ssebench("plugins").stdout
    seen = subprocess.run(
        [python, "-I", "-c", "import sys; print([p for p in sys.path if 'site-packages' in p])"],
        capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip
    assert seen == f"{[os.path.join(tmp_path, 'venv', 'lib', site_folder(), 'site-packages')]}\n"


def site_folder() -> str:
    return f"python{sys.version_info[0]}.{sys.version_info[1]}"


def test_the_copy_holds_the_running_ssebench_and_no_checkout_metadata(tmp_path: Path) -> None:
    names = {dist.metadata["Name"] for dist in bundle.distributions()}
    assert {"ssebench", "pluggy", "pydantic", "py-landlock"} <= names
    assert not {"pytest", "ruff", "mypy"} & names  # extras stay out
    made = bundle.ensure_bundle(tmp_path / "cache")
    here = Path(bundle.__file__).parent
    assert (made.site / "ssebench/evaluate/backends/bundle.py").read_bytes() == (
        here / "bundle.py"
    ).read_bytes()
    entry_points = next(made.site.glob("ssebench-*.dist-info")) / "entry_points.txt"
    assert "[ssebench.checks]" in entry_points.read_text()
    assert not list(made.site.rglob("__editable__*"))
    compiled = {p.parent.parent / (p.name.split(".")[0] + ".py") for p in made.site.rglob("*.pyc")}
    assert compiled == set(made.site.rglob("*.py"))  # each compiled by the copy, none brought
