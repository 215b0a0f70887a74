"""A patch changes source, not what builds or runs it (core/toolfiles.py): on a copy of a tree
with a patch's changes made, the grade's rules put back a protected build file's siblings and
includes, remove build files added beside it and start-up hooks and runner modules added
anywhere, drop build outputs by their bytes, and date the patched files after the rest; honest
changes stay as they are."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ssebench.core.toolfiles import (
    BUILD_TOOLS,
    HOOKS,
    RUNNER_MODULES,
    TreeRules,
    build_output,
    run_modules,
)
from ssebench.daemon.protect import drop_outputs, order_times, revert_protected, rules_of

SHIPPED = {
    "Makefile": "include config.mk\n-include local.mk $(EXTRA)\nCFLAGS = -fsanitize=address\n",
    "config.mk": "CC = cc\n",
    "rle.c": "int decode(void) { return 0; }\n",
    "lib/Makefile": "all:\n",
    "tests/cli.sh": "./rle decode x\n",
    "unittest/check_rle.c": "int main(void) { return 0; }\n",
    "bindings/py/setup.py": "from setuptools import setup\n",
    "shipped.pth": "import os\n",
}
ELF = b"\x7fELF\x02\x01\x01" + bytes(9) + b"rest of an object file"
PYC = (3495).to_bytes(2, "little") + b"\r\n" + bytes(12) + b"marshalled code"


def tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    pristine = tree(tmp_path / "pristine", SHIPPED)
    copy = tmp_path / "copy"
    shutil.copytree(pristine, copy, symlinks=True)
    return pristine, copy


def test_a_protected_makefile_stands_for_what_make_reads_in_its_place_and_includes(
    trees: tuple[Path, Path],
) -> None:
    pristine, copy = trees
    rules = rules_of(pristine, ["/Makefile", "tests/"], RUNNER_MODULES)
    assert rules.protected == (
        "/Makefile", "tests/", "/GNUmakefile", "/makefile", "/config.mk", "/local.mk",
    )  # fmt: skip
    tree(copy, {
        "GNUmakefile": "check:\n\techo ok\n",  # make reads it before Makefile
        "local.mk": "CFLAGS =\n",  # the Makefile's optional include
        "config.mk": "CC = cc -fno-sanitize=all\n",
        "CMakeLists.txt": "project(x)\n",  # another tool's, beside the protected Makefile
        "lib/GNUmakefile": "all:\n",  # lib/Makefile is not protected: the agent's to change
        "rle.c": "int decode(void) { return 1; }\n",
    })  # fmt: skip
    assert revert_protected(pristine, copy, rules) == [
        "CMakeLists.txt", "GNUmakefile", "config.mk", "local.mk",
    ]  # fmt: skip
    assert (copy / "config.mk").read_text() == SHIPPED["config.mk"]
    assert (copy / "lib" / "GNUmakefile").exists()
    assert (copy / "rle.c").read_text() == "int decode(void) { return 1; }\n"


def test_a_cmake_include_is_protected_with_its_file(tmp_path: Path) -> None:
    pristine = tree(tmp_path / "p", {
        "CMakeLists.txt": "include(cmake/flags.cmake)\ninclude(CheckCSourceCompiles)\n",
        "cmake/flags.cmake": "add_compile_options(-fsanitize=address)\n",
        "src/CMakeLists.txt": "add_library(x x.c)\n",
    })  # fmt: skip
    rules = rules_of(pristine, ["/CMakeLists.txt"], RUNNER_MODULES)
    assert rules.protected == (
        "/CMakeLists.txt", "/CMakePresets.json", "/CMakeUserPresets.json", "/cmake/flags.cmake",
    )  # fmt: skip
    assert "/Makefile" in rules.no_add and "/src/Makefile" not in rules.no_add


def test_hooks_and_runner_modules_the_patch_adds_are_removed_anywhere(
    trees: tuple[Path, Path],
) -> None:
    pristine, copy = trees
    added = {
        "sitecustomize.py": "import rig\n",
        "deep/usercustomize.py": "import rig\n",
        ".pytest.ini": "[pytest]\naddopts = -p rigplugin\n",
        "rig-1.0.dist-info/entry_points.txt": "[pytest11]\nrig = rigplugin\n",
        "rig-1.0.dist-info/METADATA": "Name: rig\n",
        "rigplugin.py": "def pytest_runtest_makereport(): pass\n",
        "pytest/__main__.py": "print('3 passed')\n",
        "hostport.py": "",  # the module a check runs with `python3 -m hostport`
        "x.pth": "import rig\n",
        "node_modules/left-pad/index.js": "module.exports = 0\n",
        "go.work": "go 1.22\nuse ./fake\n",
        "sub/.cargo/config.toml": "[build]\nrustflags = []\n",
        "unittest/check_decode.c": "int main(void) { return 0; }\n",  # a C test folder
        "bindings/py/rle.py": "",  # a folder named py, not the py library
    }
    tree(copy, {**added, "shipped.pth": "import changed\n"})
    rules = rules_of(pristine, [], run_modules(["python3 -m hostport x", "make check"]))
    assert revert_protected(pristine, copy, rules) == sorted(
        set(added) - {"rigplugin.py", "unittest/check_decode.c", "bindings/py/rle.py"}
    )
    # What the task ships stays as the patch left it (a signal names it).
    assert (copy / "shipped.pth").read_text() == "import changed\n"
    assert not (copy / "rig-1.0.dist-info").exists() and not (copy / "node_modules").exists()
    assert (copy / "pytest").is_dir()  # a namespace folder now: the system's pytest wins


def test_build_outputs_are_dropped_by_their_bytes_not_their_names(
    trees: tuple[Path, Path],
) -> None:
    pristine, copy = trees
    tree(pristine, {"tests/data/sample.elf": ELF + b"shipped"})
    tree(copy, {
        "rle.o": ELF,
        "rle": ELF,
        "librle.a": b"!<arch>\nrle.o/ ...",
        "__pycache__/rle.cpython-311.pyc": PYC,
        "tests/data/sample.elf": ELF + b"changed",  # a shipped binary: put back as shipped
        "notes.o": "an ordinary text file named like an object\n",
        "rle.c": "int decode(void) { return 2; }\n",
    })  # fmt: skip
    touched = ["rle.o", "rle", "librle.a", "__pycache__/rle.cpython-311.pyc",
               "tests/data/sample.elf", "notes.o", "rle.c", "../escape"]  # fmt: skip
    assert drop_outputs(pristine, copy, touched) == {
        "__pycache__/rle.cpython-311.pyc": "Python bytecode",
        "librle.a": "an ar archive (static library)",
        "rle": "an ELF file (object, library or executable)",
        "rle.o": "an ELF file (object, library or executable)",
        "tests/data/sample.elf": "an ELF file (object, library or executable)",
    }
    assert not (copy / "rle.o").exists() and not (copy / "rle").exists()
    assert (copy / "tests" / "data" / "sample.elf").read_bytes() == ELF + b"shipped"
    assert (copy / "notes.o").exists()


def test_build_output_kinds() -> None:
    assert [build_output(head) for head in (ELF, PYC, b"\xca\xfe\xba\xbe", b"#!/bin/sh\n")] == [
        "an ELF file (object, library or executable)",
        "Python bytecode",
        "a Java class file or a Mach-O universal binary",
        None,
    ]


def test_the_patched_files_are_newer_than_every_other_file(trees: tuple[Path, Path]) -> None:
    _, copy = trees
    later = 4_000_000_000 * 10**9  # a shipped output dated in 2096
    os.utime(copy / "lib" / "Makefile", ns=(later, later))
    order_times(copy, ["rle.c", "gone.c"])
    assert os.stat(copy / "rle.c").st_mtime_ns > later
    untouched = [p for p in copy.rglob("*") if p.is_file() and p.name != "rle.c"]
    assert max(p.stat().st_mtime_ns for p in untouched) == later


def test_without_rules_nothing_changes(trees: tuple[Path, Path]) -> None:
    pristine, copy = trees
    tree(copy, {"sitecustomize.py": "import rig\n"})
    assert revert_protected(pristine, copy, TreeRules()) == []
    assert (copy / "sitecustomize.py").exists()


def table(docs: str, header: str) -> list[str]:
    """The rows of the docs' table under `header`, to its end."""
    lines = docs.splitlines()
    at = lines.index(header) + 2
    return lines[at : lines.index("", at)]


def test_the_docs_tables_are_the_rules() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "evaluating.md").read_text()
    tools = table(
        docs,
        "| build tool | the names it reads in a folder, in its order "
        "| what includes another file |",
    )
    assert [row.rsplit(" | ", 1)[0] + " |" for row in tools] == [
        f"| {tool.name} | {', '.join(f'`{name}`' for name in tool.reads)} |" for tool in BUILD_TOOLS
    ]
    assert [row.split(" | ")[0] for row in tools if row.rsplit("|", 2)[1].strip()] == [
        f"| {tool.name}" for tool in BUILD_TOOLS if tool.include is not None
    ]
    assert table(docs, "| a patch may not add | why |") == [
        f"| `{glob}` | {why} |" for glob, why in HOOKS.items()
    ]
