"""A tree's change written without git, checked by git: `git apply` of the patch turns a copy of
the first tree into the second, for every kind of change (text, binary, modes, links, names
git quotes, new files the shipped .gitignore excludes); and a tree's planted git configuration,
attributes and hooks change nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ssebench.core.gitignore import Ignore
from ssebench.core.treediff import diff_trees, scan
from ssebench.daemon.scratch import apply_patch

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


def test_git_apply_of_the_patch_makes_the_second_tree(tmp_path: Path) -> None:
    before, after = shipped(tmp_path)
    patch = diff_trees(before, after)
    copy = tmp_path / "copy"
    shutil.copytree(before, copy, symlinks=True)
    apply_patch(copy, patch)
    want = {path: entry for path, entry in scan(after).items() if path not in ("x.o", "build/out")}
    got = scan(copy)
    assert sorted(got) == sorted(want)
    assert {p: (e.mode, e.data()) for p, e in got.items()} == {
        p: (e.mode, e.data()) for p, e in want.items()
    }
    assert diff_trees(copy, after) == b""  # only what the .gitignore excludes is left
    assert b"GIT binary patch" in patch and b'"a/q\\"uote.txt"' in patch
    assert b"new file mode 120000\n--- /dev/null\n+++ b/src-link\n" in patch


def test_the_same_tree_is_an_empty_patch(tmp_path: Path) -> None:
    before, _ = shipped(tmp_path)
    assert diff_trees(before, before) == b""


def test_planted_git_configuration_attributes_and_hooks_change_nothing(tmp_path: Path) -> None:
    before, after = shipped(tmp_path)
    marker = tmp_path / "ran"
    write(after, {
        ".gitattributes": b"* filter=evil diff=evil text eol=crlf\n",
        ".git/config": f'[filter "evil"]\n\tclean = touch {marker}\n'
                       f'[diff "evil"]\n\ttextconv = touch {marker}\n'.encode(),
        ".git/hooks/pre-commit": b"+#!/bin/sh\ntouch " + str(marker).encode() + b"\n",
        ".git/HEAD": b"ref: refs/heads/main\n",
    })  # fmt: skip
    plain = diff_trees(before, after)
    assert not marker.exists()
    assert b".git/" not in plain and b"\n+2\r\n" in plain  # bytes as they are, no eol rule
    copy = tmp_path / "copy"
    shutil.copytree(before, copy, symlinks=True)
    apply_patch(copy, plain)
    assert (copy / ".gitattributes").read_bytes() == (after / ".gitattributes").read_bytes()
    assert not (copy / ".git").exists()


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


def test_git_itself_agrees_on_the_rules(tmp_path: Path) -> None:
    """The same questions to `git check-ignore`, in a repository of our own making."""
    if shutil.which("git") is None:
        pytest.skip("no git")
    (tmp_path / ".gitignore").write_text("*.o\n!keep.o\n/build/\ndoc/*.txt\n**/cache\n")
    paths = ["x.o", "keep.o", "build/a", "src/build/a", "doc/a.txt", "doc/s/a.txt", "a/cache"]
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, env=env, check=True)
    done = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=tmp_path, env=env,
                          capture_output=True, text=True)  # fmt: skip
    ignore = Ignore(tmp_path)
    assert done.stdout.split() == [path for path in paths if ignore.excludes(path)]
