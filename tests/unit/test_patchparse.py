"""A patch read as data: what `git diff` writes (treediff writes it the same way, checked by git
in test_treediff.py) and what `diff -ruN` writes, each file with its lines, numbered as in the
file they belong to; and text that is no patch, or a cut one, reads as what it holds."""

from __future__ import annotations

from pathlib import Path

from ssebench.core.patchparse import FileDiff, Hunk, Line, parse_patch
from ssebench.evaluate.treediff import diff_trees


def diff(tmp: Path, before: dict[str, bytes], after: dict[str, bytes | str]) -> bytes:
    """The patch from `before` to `after` (a str in `after` is a link's target)."""
    for side, files in (("a", before), ("b", after)):
        (tmp / side).mkdir()
        for name, content in files.items():
            path = tmp / side / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, str):
                path.symlink_to(content)
            else:
                path.write_bytes(content)
    (tmp / "b" / "run.sh").chmod(0o755)
    return diff_trees(tmp / "a", tmp / "b")


def test_what_git_diff_writes(tmp_path: Path) -> None:
    before = {"run.sh": b"one\ntwo\nthree\n", "gone.py": b"assert x\n", "same": b"s\n"}
    after: dict[str, bytes | str] = {
        "run.sh": b"one\n2\nthree\nfour\n",
        "same": b"s\n",
        "new dir/ü.bin": b"\0RLE1 binary\n",
        "link": "/bin/true",
    }
    assert parse_patch(diff(tmp_path, before, after)) == [
        FileDiff("gone.py", None, 0o100644, None, hunks=[Hunk(1, [Line("-", "assert x", 1)])]),
        FileDiff(None, "link", None, 0o120000, hunks=[Hunk(0, [Line("+", "/bin/true", 1)])]),
        FileDiff(None, "new dir/ü.bin", None, 0o100644, binary=True, content=b"\0RLE1 binary\n"),
        FileDiff(
            "run.sh",
            "run.sh",
            0o100644,
            0o100755,
            hunks=[
                Hunk(
                    1,
                    [
                        Line(" ", "one", 1),
                        Line("-", "two", 2),
                        Line("+", "2", 2),
                        Line(" ", "three", 3),
                        Line("+", "four", 4),
                    ],
                )
            ],
        ),
    ]


def test_what_diff_ruN_writes_and_a_rename() -> None:
    patch = (
        b"diff -ruN a/rle.c b/rle.c\n--- a/rle.c\t2024-01-01 00:00:00\n+++ b/rle.c\n"
        b"@@ -10,2 +10,3 @@\n ctx\n--- a removed line that looks like a header\n+x\n+y\n"
        b"diff --git a/old.sh b/new.sh\nsimilarity index 90%\nrename from old.sh\n"
        b"rename to new.sh\n"
    )
    removed_header = "-- a removed line that looks like a header"
    assert parse_patch(patch) == [
        FileDiff(
            "rle.c",
            "rle.c",
            hunks=[
                Hunk(
                    10,
                    [
                        Line(" ", "ctx", 10),
                        Line("-", removed_header, 11),
                        Line("+", "x", 11),
                        Line("+", "y", 12),
                    ],
                )
            ],
        ),
        FileDiff("old.sh", "new.sh"),
    ]


def test_text_that_is_no_patch_or_a_cut_one() -> None:
    assert parse_patch(b"") == []
    assert parse_patch(b"hello\n@@ -1 +1 @@\n-x\n+y\n") == []  # a hunk of no file
    cut = b"--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n-a\n+b\n"
    assert parse_patch(cut) == [
        FileDiff("x", "x", hunks=[Hunk(1, [Line("-", "a", 1), Line("+", "b", 1)])])
    ]
    broken = b"diff --git a/f b/f\nnew file mode 100644\nGIT binary patch\nliteral 5\nzzzz\n\n"
    assert parse_patch(broken) == [FileDiff(None, "f", None, 0o100644, binary=True)]
    quoted = b'diff --git "a/tab\\tname" "b/tab\\tname"\nnew file mode 100644\n'
    assert [f.path for f in parse_patch(quoted)] == ["tab\tname"]
    assert parse_patch(b'--- "a/\\303\\274"\n+++ b/x\n')[0].old == "ü"
