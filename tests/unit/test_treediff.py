"""A tree's change written without git, and .gitignore's rules read without it: the trees of
every kind of change (text, binary, modes, links, names git quotes, new files the shipped
.gitignore excludes), which tests/e2e/test_treediff.py checks with git itself."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ssebench.core.gitignore import Ignore
from ssebench.evaluate.treediff import diff_trees

NAMES = ["a b.txt", 'q"uote.txt', "ü.txt", "tab\tname.txt"]


def write(root: Path, files: dict[str, bytes | str | None]) -> None:
    """bytes: a file; "-> x": a link to x; "+x" before the bytes: executable; None: deleted."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            path.unlink()
        if isinstance(content, str):
            path.symlink_to(content.removeprefix("-> "))
        elif content is not None:
            path.write_bytes(content.removeprefix(b"+"))
            path.chmod(0o755 if content.startswith(b"+") else 0o644)


BEFORE: dict[str, bytes | str | None] = {
    "src/main.c": b"int main(void) {\n    return 0;\n}\n" * 20,
    "no-newline.txt": b"last line",
    "crlf.txt": b"one\r\ntwo\r\n",
    "blob.bin": bytes(range(256)) * 10,
    "run.sh": b"echo hi\n",
    "link": "-> src/main.c",
    "empty": b"",
    "gone.txt": b"bye\n",
    "gone-empty": b"",
    "becomes-link": b"file\n",
    "tracked.o": b"shipped even though ignored\n",
    ".gitignore": b"*.o\n/build/\n!keep.o\n",
    **{name: b"x\n" for name in NAMES},
}
AFTER: dict[str, bytes | str | None] = {
    "src/main.c": b"int main(void) {\n    return 0;\n}\n" * 10 + b"/* fixed */\n" + b"x\n" * 9,
    "no-newline.txt": b"last line, longer",
    "crlf.txt": b"one\r\n2\r\n",
    "blob.bin": bytes(range(255, -1, -1)) * 10,
    "run.sh": b"+echo hi\n",
    "link": "-> run.sh",
    "gone.txt": None,
    "gone-empty": None,
    "becomes-link": "-> empty",
    "tracked.o": b"changed, and still part of the patch\n",
    "new/deep/file.txt": b"new\n",
    "new.bin": b"\0\1\2",
    "new-empty": b"",
    "src-link": "-> src",  # a link to a folder is a link too, never entered
    "keep.o": b"not ignored\n",
    "x.o": b"a build output\n",
    "build/out": b"a build output\n",
    **{name: b"y\n" for name in NAMES},
}


def shipped(tmp_path: Path) -> tuple[Path, Path]:
    before, after = tmp_path / "before", tmp_path / "after"
    write(before, BEFORE)
    shutil.copytree(before, after, symlinks=True)
    write(after, AFTER)
    return before, after


def test_the_same_tree_is_an_empty_patch(tmp_path: Path) -> None:
    before, _ = shipped(tmp_path)
    assert diff_trees(before, before) == b""


@pytest.mark.parametrize(
    ("rules", "path", "excluded"),
    [
        ("*.o", "a/b/x.o", True),
        ("*.o\n!keep.o", "keep.o", False),
        ("/build/", "build/x", True),
        ("/build/", "src/build/x", False),
        ("build/", "src/build/x", True),
        ("build/", "build", False),  # a file named build: folders only
        ("doc/*.txt", "doc/a.txt", True),
        ("doc/*.txt", "doc/sub/a.txt", False),
        ("**/cache", "a/b/cache", True),
        ("a/**/z", "a/b/c/z", True),
        ("out/**", "out/x/y", True),
        ("x?.c", "x1.c", True),
        ("[!a]b", "ab", False),
        ("[!a]b", "cb", True),
        ("# comment\n\\#hash", "#hash", True),
        ("dir/\n!dir/keep", "dir/keep", True),  # inside an excluded folder: still out
    ],
)
def test_gitignore_rules(tmp_path: Path, rules: str, path: str, excluded: bool) -> None:
    (tmp_path / ".gitignore").write_text(rules + "\n")
    assert Ignore(tmp_path).excludes(path) is excluded


def test_a_deeper_gitignore_has_the_last_word(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / "sub" / ".gitignore").write_text("!keep.log\n")
    ignore = Ignore(tmp_path)
    assert (ignore.excludes("sub/keep.log"), ignore.excludes("keep.log")) == (False, True)


def test_rules_a_walk_read_are_the_rules_of_the_files(tmp_path: Path) -> None:
    """The runner copy reads the .gitignore files as it copies them (a walk by path stops at a
    deep tree): the same bytes give the same rules, line breaks of every kind included."""
    files = [("", b"*.log\r\nbuild/\r/out\n"), ("sub/", b"!keep.log\n\xff.o\n")]
    for folder, data in files:
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / ".gitignore").write_bytes(data)
    read, given = Ignore(tmp_path), Ignore.of_files(files)
    paths = ["a.log", "sub/keep.log", "build/x", "out", "sub/out", "sub/\ufffd.o", "src/a.c"]
    assert [given.excludes(p) for p in paths] == [read.excludes(p) for p in paths]
    assert [given.excludes(p) for p in paths] == [True, False, True, True, False, True, False]
    # Its own rules only: the walk has looked at the folders on the way already.
    assert (given.excludes("build/x"), given.excludes_itself("build/x")) == (True, False)
