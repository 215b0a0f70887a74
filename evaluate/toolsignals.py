"""The signals about what builds and runs the code rather than the code (core/toolfiles.py's
rules, read from a patch): a build file a tool reads in place of the shipped one, or one a
shipped build file includes; a build output among the patch's files."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence

from ssebench.core.gitignore import Ignore
from ssebench.core.toolfiles import TOOL_OF, included_globs
from ssebench.evaluate.verdicts import Signal

Lines = Callable[[str], list[str]]  # a shipped file's lines


def output_detail(kind: str) -> str:
    return f"{kind}: the grade drops it, a build's outputs come from the build"


def output_signals(dropped: dict[str, str], signals: Sequence[Signal]) -> list[Signal]:
    """A `binary-output` signal for each build output the grade dropped that the patch's own
    bytes did not show (a binary delta is known only once applied)."""
    named = {signal.path for signal in signals if signal.kind == "binary-output"}
    return [
        Signal(kind="binary-output", path=path, line=None, detail=output_detail(kind))
        for path, kind in sorted(dropped.items())
        if path not in named
    ]


def build_file_added(path: str, build_files: Lines, shipped: Lines) -> str | None:
    """Why the new file at `path` changes what builds: a name that its folder's shipped build
    tool reads in place of the shipped build file (or another tool's, beside it), or a file
    that a shipped build file of its folder or above includes. `build_files`: a folder's
    shipped build files."""
    folder, name = posixpath.split(path)
    here = build_files(folder)
    if name in TOOL_OF and here:
        tool = TOOL_OF[name]
        same = [shipped_name for shipped_name in here if shipped_name in tool.reads]
        if same:
            return f"{tool.name} reads {name} in place of the shipped {same[0]}"
        return f"a {tool.name} build file beside the shipped {here[0]}"
    while True:
        for build in build_files(folder):
            where = posixpath.join(folder, build)
            globs = list(included_globs(folder, TOOL_OF[build], shipped(where)))
            if globs and Ignore.of(globs).excludes(path):
                return f"the shipped {where} includes it"
        if not folder:
            return None
        folder = posixpath.dirname(folder)
