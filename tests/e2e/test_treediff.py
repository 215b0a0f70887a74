"""A tree's change written without git, checked by git itself: `git apply` of the patch turns a
copy of the first tree into the second, for every kind of change; a tree's planted git
configuration, attributes and hooks change nothing; and `git check-ignore` agrees on the
.gitignore rules (tests/unit/test_treediff.py has the trees and the rules)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from unit.test_treediff import shipped, write

from ssebench.core.gitignore import Ignore
from ssebench.daemon.scratch import apply_patch
from ssebench.evaluate.treediff import diff_trees, scan


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
