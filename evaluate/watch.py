"""What the signal rules know of a task (evaluate/signals.py's `Watch`), read before anything runs.

From task.toml: the protected globs, the tree files the checks' commands run, the PoC files
(bytes and hashes) and the check folders. From the pristine tree: which of those files exist,
and a file's lines as shipped (for the section of a configuration file a change lies in).
All is read as data: nothing of the tree is run, and no symbolic link leads out of it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import posixpath
import re
import shlex
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ssebench.core.toolfiles import BUILD_TOOLS, run_modules
from ssebench.evaluate.linefind import excerpt
from ssebench.evaluate.signals import PocFile, Watch

if TYPE_CHECKING:
    from ssebench.core.daemons.door import Task

MAKEFILES = BUILD_TOOLS[0].reads  # what make reads, in its order
BUILD_ORDER = tuple(name for tool in BUILD_TOOLS for name in tool.reads)
_READ_LIMIT = 8 << 20  # a PoC or a shipped file longer than this is not compared
_POC_FILES = 256  # PoC files compared at most (ARVO-like tasks have one; fuzz corpora many)
_OPERATORS = {"&&", "||", ";", "|", "&", "(", ")", ";;", "|&"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = {"env", "exec", "time", "nice", "nohup", "command", "timeout", "stdbuf", "setsid"}
_INTERPRETER = re.compile(r"(ba|da|z|k)?sh|python[0-9.]*|pypy[0-9.]*|perl|ruby|node|php|lua|tclsh")


def watch_for(task: Task) -> Watch:
    named: dict[str, str] = {}
    for key, table in task.checks.items():
        for command in table.cases:
            for path in command_paths(command, task.source):
                named.setdefault(path, f"`{excerpt(command)}` (checks.{key})")
    return Watch(
        protected=task.protected,
        named=named,
        pocs=tuple(_pocs(task)),
        harness=tuple(_harness(task)),
        shipped=functools.partial(shipped_lines, task.source),
        build_files=functools.partial(shipped_build_files, task.source),
        modules=run_modules(task.commands()),
    )


def _tokens(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: bash would refuse it, words are close enough
        return command.split()


def _inside(source: Path, raw: str) -> str | None:
    """`raw` as a path of the tree (relative, or from $SSE_SOURCE_DIR), when it exists there."""
    for prefix in ("$SSE_SOURCE_DIR/", "${SSE_SOURCE_DIR}/", f"{source}/"):
        raw = raw.removeprefix(prefix)
    if not raw or raw.startswith("-") or "$" in raw or raw.startswith("/"):
        return None
    path = posixpath.normpath(raw)
    if path in (".", "..") or path.startswith("../"):
        return None
    real = os.path.realpath(source / path)
    if not os.path.lexists(source / path) or not Path(real).is_relative_to(source.resolve()):
        return None
    return path


def command_paths(command: str, source: Path) -> Iterator[str]:
    """The tree files a command runs: a file in a command's place (`./tests/run.sh`), the
    script an interpreter is given (`sh tests/cli.sh`; `-c` text is read as a command too;
    `-m` names a module, the program under test as often as not), the makefile of a make.
    What a command only reads as data (`gcc rle.c`, `grep x state.txt`) is not among them."""
    simple: list[str] = []
    for word in [*_tokens(command), ";"]:
        if word not in _OPERATORS:
            simple.append(word)
            continue
        while simple and (
            _ASSIGNMENT.match(simple[0]) or posixpath.basename(simple[0]) in _WRAPPERS
        ):
            simple.pop(0)  # `env X=1`, `timeout 60`, `nice -n 5`: what they run comes next
            while simple and (simple[0].startswith("-") or simple[0][:1].isdigit()):
                simple.pop(0)
        if simple:
            yield from _runs(simple, source)
        simple = []


def _runs(words: list[str], source: Path) -> Iterator[str]:
    name = posixpath.basename(words[0])
    if name in ("make", "gmake"):
        options: dict[str, str | None] = {"-C": ".", "-f": None}
        for at, word in enumerate(words[1:-1], 1):
            if word in options:
                options[word] = words[at + 1]
        given = options["-f"]
        names = [given] if given is not None else [f"{options['-C']}/{m}" for m in MAKEFILES]
    elif _INTERPRETER.fullmatch(name):
        names = []
        for at, word in enumerate(words[1:], 1):
            if word == "-c" and at + 1 < len(words):
                yield from command_paths(words[at + 1], source)
            if word in ("-c", "-m"):
                break
            if not word.startswith("-"):
                names = [word]
                break
    else:
        names = [words[0]]
    for raw in names:
        if (path := _inside(source, raw)) is not None and not (source / path).is_dir():
            yield path


def _read(path: Path, limit: int = _READ_LIMIT) -> bytes | None:
    """A regular file's bytes (no link followed at its end), or None when over `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        return file.read(limit + 1)[:limit]


def shipped_lines(source: Path, path: str) -> list[str]:
    """The lines of the tree's file `path` as shipped; none when it is not a file of the tree."""
    inside = _inside(source, path)
    data = _read(source / inside) if inside is not None else None
    return [] if data is None else data.decode("utf-8", "replace").splitlines()


def shipped_build_files(source: Path, folder: str) -> list[str]:
    """The build files (core/toolfiles.py's names) that the tree's `folder` holds as shipped,
    in the tools' order."""
    inside = _inside(source, folder) if folder else "."
    if inside is None:
        return []
    return [name for name in BUILD_ORDER if os.path.isfile(source / inside / name)]


def _shown(task: Task, path: Path) -> str:
    """A task file as task.toml would name it: from the task folder, else absolute."""
    inside = path.is_relative_to(task.directory)
    return path.relative_to(task.directory).as_posix() if inside else str(path)


def _pocs(task: Task) -> Iterator[PocFile]:
    """The files of the checks that show the fix (the PoCs), each with its bytes and hashes."""
    seen = 0
    for table in task.checks.values():
        if not table.check.shows_fix:
            continue
        for root in table.files:
            if not os.path.lexists(root):
                continue  # only the task's image has it (`/testcase`): nothing to read here
            found = (
                [root]
                if not root.is_dir()
                else sorted(Path(here, name) for here, _, names in os.walk(root) for name in names)
            )
            for path in found:
                if seen >= _POC_FILES:
                    return
                seen += 1
                data = _read(path) or b""
                digests = (
                    tuple(
                        hashlib.new(name, data, usedforsecurity=False).hexdigest()
                        for name in ("sha256", "sha1", "md5")
                    )
                    if data
                    else ()
                )
                yield PocFile(_shown(task, path), data, digests)


def _harness(task: Task) -> Iterator[str]:
    """The task folder's path and each check folder, as a patch would name them."""
    yield str(task.directory)
    for table in task.checks.values():
        for path in table.files:
            yield _shown(task, path)
