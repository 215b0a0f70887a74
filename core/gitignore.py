""".gitignore rules, read as text: which new files of a tree are build outputs, not source, and
which paths task.toml's `protected` globs name.

The rules come from the tree as shipped, never from the tree an agent left, and nothing else
of git's is read (no configuration, no global excludes file). The usual syntax: `#` comments,
`!` negation, a trailing `/` for folders only, a `/` at the start or in the middle anchoring
the pattern to its .gitignore's folder, `*`, `?`, `[...]` and `**`. As in git, a file inside an
excluded folder cannot be taken back by a later `!`.
"""

from __future__ import annotations

import functools
import io
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class _Rule:
    folder: str  # where its .gitignore lies, relative to the tree ("" at the top, else "a/b/")
    pattern: re.Pattern[str]
    anchored: bool
    folders_only: bool
    negated: bool

    def matches(self, path: str, is_folder: bool) -> bool:
        if not path.startswith(self.folder) or (self.folders_only and not is_folder):
            return False
        inside = path[len(self.folder) :]
        return bool(self.pattern.fullmatch(inside if self.anchored else inside.rsplit("/", 1)[-1]))


def _regex(glob: str) -> str:
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end]
            out.append(
                "[" + ("^" + body[1:] if body[0] in "!^" else body).replace("\\", "\\\\") + "]"
            )
            i = end + 1
        else:
            out.append(re.escape(glob[i + 1] if glob[i] == "\\" and i + 1 < len(glob) else glob[i]))
            i += 2 if glob[i] == "\\" else 1
    return "".join(out)


@functools.lru_cache(maxsize=4096)  # a task's protected globs, loaded for each of thousands
def _rule(folder: str, line: str) -> _Rule | None:
    line = line.rstrip("\n\r")
    if line.endswith(" ") and not line.endswith("\\ "):
        line = line.rstrip(" ")
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    line = line[1:] if negated else line.removeprefix("\\")
    folders_only = line.endswith("/")
    line = line.rstrip("/")
    anchored = "/" in line
    if not line:
        return None
    return _Rule(folder, re.compile(_regex(line.lstrip("/"))), anchored, folders_only, negated)


class Ignore:
    """The .gitignore rules found under `root`, ready to say whether a path is excluded."""

    def __init__(self, root: Path) -> None:
        self.rules: list[_Rule] = []
        for here, folders, names in os.walk(root):
            folders[:] = sorted(name for name in folders if name != ".git")
            if ".gitignore" in names and not os.path.islink(os.path.join(here, ".gitignore")):
                relative = Path(here).relative_to(root).as_posix()
                folder = "" if relative == "." else f"{relative}/"
                with open(
                    os.path.join(here, ".gitignore"), encoding="utf-8", errors="replace"
                ) as f:
                    self.rules += [rule for line in f if (rule := _rule(folder, line))]

    @classmethod
    def of_files(cls, files: Iterable[tuple[str, bytes]]) -> Ignore:
        """The rules of .gitignore files a walk of the tree read: each its folder ("" at the
        top, else "a/b/") and its bytes, a folder's before those of the folders inside it."""
        ignore = cls.__new__(cls)
        ignore.rules = []
        for folder, data in files:
            lines = io.StringIO(data.decode("utf-8", "replace"), newline=None)
            ignore.rules += [rule for line in lines if (rule := _rule(folder, line))]
        return ignore

    @classmethod
    def of(cls, patterns: Iterable[str]) -> Ignore:
        """Rules given as the lines of a .gitignore at the top of the tree. ValueError names a
        pattern that is no rule (empty, a comment) or no valid glob."""
        ignore = cls.__new__(cls)
        ignore.rules = []
        for pattern in patterns:
            if any(char in pattern for char in "\n\r\0"):
                raise ValueError(f"{pattern!r}: a glob is one line, without NUL")
            try:
                rule = _rule("", pattern)
            except re.error:
                raise ValueError(f"{pattern}: not a valid glob") from None
            if rule is None:
                raise ValueError(f"{pattern!r}: empty or a comment, not a path")
            ignore.rules.append(rule)
        return ignore

    def _own(self, path: str, is_folder: bool) -> bool:
        excluded = False
        for rule in self.rules:  # shallower files first, so a deeper one has the last word
            if rule.matches(path, is_folder):
                excluded = not rule.negated
        return excluded

    def excludes_itself(self, path: str, is_folder: bool = False) -> bool:
        """Whether `path` is ignored by its own rules, its folders not looked at: for a walk
        that knows they are not excluded (excludes() looks at each, in a time that grows with
        the square of the depth)."""
        return self._own(path, is_folder)

    def excludes(self, path: str, is_folder: bool = False) -> bool:
        """Whether the file (or folder) at `path` (relative, `/`-separated) is ignored, by its
        own rules or as part of an excluded folder."""
        parts = path.split("/")
        folders = ("/".join(parts[: i + 1]) for i in range(len(parts) - 1))
        return any(self._own(f, True) for f in folders) or self._own(path, is_folder)
