"""task.toml's `protected` paths put back in a graded copy: whatever the patch made of them (a
changed, deleted or added file, a link out of the tree, a folder turned into a file), the copy
holds the pristine tree's entries there afterwards, the rest of the patch stays, and nothing
outside the copy is written, even through a link the patch planted."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ssebench.core.toolfiles import TreeRules
from ssebench.daemon.protect import globs, revert_protected, unmatched_globs

Snapshot = dict[str, tuple[object, ...]]


def snapshot(root: Path) -> Snapshot:
    """Every entry under `root`: a folder, a link and its target, or a file's bytes and mode."""
    found: Snapshot = {}
    for here, folders, names in os.walk(root):
        for name in [*folders, *names]:
            path = Path(here, name)
            key = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[key] = ("link", os.readlink(path))
            elif path.is_dir():
                found[key] = ("folder",)
            else:
                found[key] = ("file", path.read_bytes(), path.stat().st_mode & 0o777)
    return found


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


SHIPPED = {
    "Makefile": "CFLAGS = -fsanitize=address\n",
    "rle.c": "int decode(void) { return 0; }\n",
    "tests/cli.sh": 'test "$(./rle)" = ok || exit 1\n',
    "tests/data/in.txt": "data\n",
    "sub/Makefile": "all:\n",
}


def revert(pristine: Path, copy: Path, protected: list[str]) -> list[str]:
    """What `protected` alone puts back (the tools' rules: tests/unit/test_toolfiles.py)."""
    return revert_protected(pristine, copy, TreeRules(protected=tuple(protected)))


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    pristine = tree(tmp_path / "pristine", SHIPPED)
    (pristine / "tests" / "cli.sh").chmod(0o755)
    copy = tmp_path / "copy"
    shutil.copytree(pristine, copy, symlinks=True)
    return pristine, copy


def test_every_kind_of_change_is_put_back_and_the_rest_stays(trees: tuple[Path, Path]) -> None:
    pristine, copy = trees
    (copy / "Makefile").write_text("CFLAGS =\n")  # changed
    (copy / "tests" / "cli.sh").chmod(0o644)  # its mode only
    (copy / "tests" / "data" / "in.txt").unlink()  # deleted
    tree(copy, {"tests/conftest.py": "x\n", "tests/new/a.py": "a\n", "conftest.py": "y\n"})
    (copy / "rle.c").write_text("int decode(void) { return 1; }\n")  # not protected
    (copy / "sub" / "Makefile").write_text("changed\n")  # `/Makefile` is the top one only
    expected = {**snapshot(pristine), "rle.c": snapshot(copy)["rle.c"]}
    expected["sub/Makefile"] = snapshot(copy)["sub/Makefile"]
    assert revert(pristine, copy, ["/Makefile", "tests/", "conftest.py"]) == [
        "Makefile",
        "conftest.py",
        "tests/cli.sh",
        "tests/conftest.py",
        "tests/data/in.txt",
        "tests/new/a.py",
    ]
    assert snapshot(copy) == expected
    assert revert(pristine, copy, ["/Makefile", "tests/", "conftest.py"]) == []


def test_nothing_protected_changes_nothing(trees: tuple[Path, Path]) -> None:
    pristine, copy = trees
    (copy / "tests" / "cli.sh").write_text("echo ok\n")
    before = snapshot(copy)
    assert revert(pristine, copy, []) == []
    assert revert(pristine, copy, ["nothing-here/"]) == []
    assert snapshot(copy) == before


def test_a_protected_file_made_a_link_out_of_the_tree_is_replaced_not_written_through(
    trees: tuple[Path, Path], tmp_path: Path
) -> None:
    pristine, copy = trees
    outside = tree(tmp_path / "outside", {"cli.sh": "mine\n", "Makefile": "mine\n"})
    (copy / "Makefile").unlink()
    (copy / "Makefile").symlink_to(outside / "Makefile")
    shutil.rmtree(copy / "tests")
    (copy / "tests").symlink_to(outside)  # the whole folder, to one holding a cli.sh
    assert revert(pristine, copy, ["/Makefile", "tests/**"]) == [
        "Makefile",
        "tests",
        "tests/cli.sh",
        "tests/data/in.txt",
    ]
    assert snapshot(copy) == snapshot(pristine)
    assert snapshot(outside) == {
        "cli.sh": ("file", b"mine\n", 0o644),
        "Makefile": ("file", b"mine\n", 0o644),
    }


def test_a_protected_folder_made_a_file_and_a_file_made_a_folder(trees: tuple[Path, Path]) -> None:
    pristine, copy = trees
    shutil.rmtree(copy / "tests")
    (copy / "tests").write_text("not a folder\n")
    (copy / "Makefile").unlink()
    tree(copy, {"Makefile/inside": "x\n"})
    assert revert(pristine, copy, ["tests/", "/Makefile"]) == [
        "Makefile",
        "tests",
        "tests/cli.sh",
        "tests/data/in.txt",
    ]
    assert snapshot(copy) == snapshot(pristine)


def test_links_of_the_tree_are_kept_as_links(trees: tuple[Path, Path]) -> None:
    pristine, copy = trees
    (pristine / "tests" / "run").symlink_to("cli.sh")
    (copy / "tests" / "run").symlink_to("/bin/true")  # a link of the patch's own
    (copy / "tests" / "extra").symlink_to("/etc")
    assert revert(pristine, copy, ["tests/"]) == ["tests/extra", "tests/run"]
    assert snapshot(copy) == snapshot(pristine)


def test_times_and_a_negated_glob(trees: tuple[Path, Path]) -> None:
    pristine, copy = trees
    os.utime(pristine / "tests" / "data" / "in.txt", (1_000_000, 1_000_000))
    (copy / "tests" / "cli.sh").write_text("echo ok\n")
    (copy / "tests" / "data" / "in.txt").write_text("regenerated\n")
    # As in git: `tests/*` excludes the folder tests/data, so all it holds is protected.
    reverted = revert(pristine, copy, ["tests/*", "!tests/cli.sh"])
    assert reverted == ["tests/data/in.txt"]
    assert (copy / "tests" / "data" / "in.txt").stat().st_mtime == 1_000_000
    assert (copy / "tests" / "cli.sh").read_text() == "echo ok\n"


def test_globs_that_match_nothing(tmp_path: Path) -> None:
    root = tree(tmp_path, SHIPPED)
    wanted = ["tests/", "/Makefile", "Makefile", "test/", "*.py", "!tests/gone.sh", "sub/*"]
    assert unmatched_globs(root, wanted) == ["test/", "*.py", "!tests/gone.sh"]
    assert unmatched_globs(root, []) == []


def test_a_glob_that_is_no_path_fails_in_one_line() -> None:
    def fail(text: str) -> Exception:
        return ValueError(text)

    assert globs(["tests/", "!tests/keep"], fail) == ("tests/", "!tests/keep")
    for glob, error in [
        ("../x", "../x: must be a path inside the source tree"),
        ("# x", "'# x': empty or a comment, not a path"),
        ("[b-a]", "[b-a]: not a valid glob"),
    ]:
        with pytest.raises(ValueError) as caught:
            globs([glob], fail)
        assert str(caught.value) == error
