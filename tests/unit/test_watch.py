"""What the signal rules know of a task: the tree files its commands run (a file in a command's
place, an interpreter's script, a make's makefile; never a `python -m` module or a file only
read), its PoC files and its check folders, read from task.toml and the pristine tree as data."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ssebench.core.daemons.door import load_task
from ssebench.core.registry import build_registry
from ssebench.evaluate.signals import PocFile
from ssebench.evaluate.watch import command_paths, shipped_lines, watch_for


@pytest.fixture
def source(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    for name in ("Makefile", "sub/GNUmakefile", "tests/run.sh", "app/__main__.py", "mk/rules"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n")
    (root / "out").symlink_to("/etc")
    return root


@pytest.mark.parametrize(
    ("command", "named"),
    [
        ("make -j2", ["Makefile"]),
        ("make -C sub check && sh tests/run.sh", ["sub/GNUmakefile", "tests/run.sh"]),
        ("/usr/bin/make -f mk/rules", ["mk/rules"]),
        ("python3 -m pytest -q tests", []),
        ("python3 -m app $SSE_TASK_DIR/pocs/x", []),  # the program under test, not a check file
        ("$SSE_SOURCE_DIR/tests/run.sh; ./tests/../tests/run.sh", ["tests/run.sh"] * 2),
        ("env A=1 timeout 60 nice -n 5 bash -e tests/run.sh", ["tests/run.sh"]),
        ("bash -c 'make && python3 app/__main__.py' | tee log", ["Makefile", "app/__main__.py"]),
        ("gcc -o rle mk/rules tests/run.sh && grep -q x Makefile", []),  # read as data
        ("cat ../src/Makefile; ../src/Makefile; out/passwd; ./tests; .", []),
        ("sh -c 'sh tests/run.sh", []),  # an unclosed quote: bash runs nothing, none found
    ],
)
def test_the_files_a_command_runs(source: Path, command: str, named: list[str]) -> None:
    assert list(command_paths(command, source)) == named


def test_a_tasks_watch(tmp_path: Path, source: Path) -> None:
    (tmp_path / "pocs").mkdir()
    (tmp_path / "pocs" / "crash.bin").write_bytes(b"RLE1 crash")
    (tmp_path / "task.toml").write_text(
        'source = "src"\nprotected = ["tests/"]\n[checks.build]\nrun = "make"\n'
        '[checks.pocs]\nfiles = ["pocs"]\nrun = "python3 -m app $SSE_TASK_DIR/pocs/crash.bin"\n'
        '[checks.functional]\nrun = "sh tests/run.sh"\n'
    )
    watch = watch_for(load_task(tmp_path, build_registry().checks))
    data = b"RLE1 crash"
    digests = tuple(hashlib.new(name, data).hexdigest() for name in ("sha256", "sha1", "md5"))
    assert (watch.protected, watch.named, watch.pocs, watch.harness) == (
        ("tests/",),
        {
            "Makefile": "`make` (checks.build)",
            "tests/run.sh": "`sh tests/run.sh` (checks.functional)",
        },
        (PocFile("pocs/crash.bin", data, digests),),
        (str(tmp_path), "pocs"),
    )
    assert watch.shipped("Makefile") == ["x"]
    assert shipped_lines(source, "out/passwd") == []  # through a link out of the tree: nothing
    assert shipped_lines(source, "../src/Makefile") == []
