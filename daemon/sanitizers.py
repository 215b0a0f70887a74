"""Where a case's sanitizer reports go and what status they end it with: set by us, not the patch.

A PoC is judged by what its program does, never by a channel the patch controls (red team,
12-05: a program that sent fd 2 to /dev/null, or whose `__asan_default_options` said
`log_path=/tmp/x:exitcode=0`, had its unfixed tree graded resolved). So every case's
environment points each sanitizer's `log_path` into the case's report folder, which the
supervisor copies into the case's log (daemon/confine/reports.py), and sets `exitcode` to a
status of the case's own, N, which the PoC judge reads as a report. A runtime reads its
variable after `__*_default_options`, and a later flag of a variable wins over an earlier one:
ours come last, so they replace a task's own `log_path` (or the program's), and the task's
other flags stay. A task that sets `exitcode` itself keeps it, in every variable (the runtimes
read one another's: ASan reads LSAN_OPTIONS and UBSAN_OPTIONS after its own), and then N is
not used.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping

from ssebench.core.case import SANITIZER_EXITS
from ssebench.daemon.task import Task

VARIABLES = (
    *("ASAN_OPTIONS", "UBSAN_OPTIONS", "MSAN_OPTIONS"),
    *("LSAN_OPTIONS", "TSAN_OPTIONS", "HWASAN_OPTIONS"),
)
PREFIX = "report"  # a runtime names its report <prefix>.<pid>
EXIT_CODES = SANITIZER_EXITS  # N, drawn for each case (core/case.py says why these)
_SEPARATORS = " ,:\n\t\r"  # what separates two flags (sanitizer_flag_parser.cpp)


def flags(options: str) -> list[tuple[str, str]]:
    """The (name, value) pairs of a sanitizer options string, as its runtime parses it: flags
    separated by spaces, commas or colons, a value quoted with ' or " when it holds those."""
    found, at = [], 0
    while at < len(options):
        if options[at] in _SEPARATORS:
            at += 1
            continue
        end = at
        while end < len(options) and options[end] not in _SEPARATORS + "=":
            end += 1
        name, at = options[at:end], end
        if at >= len(options) or options[at] != "=":
            found.append((name, ""))
            continue
        at += 1
        if at < len(options) and options[at] in "'\"":
            close = options.find(options[at], at + 1)
            close = len(options) if close < 0 else close
            found.append((name, options[at + 1 : close]))
            at = close + 1
            continue
        end = at
        while end < len(options) and options[end] not in _SEPARATORS:
            end += 1
        found.append((name, options[at:end]))
        at = end
    return found


def sets_exit_code(values: Mapping[str, str]) -> bool:
    """Whether any of the sanitizers' variables among `values` sets `exitcode` itself."""
    return any(name == "exitcode" for v in VARIABLES for name, _ in flags(values.get(v, "")))


def exit_code(task: Task, environ: Mapping[str, str]) -> int | None:
    """A new case's N, unpredictable; None when the task (its `env`, or what it passes of
    `environ`) sets `exitcode` itself."""
    passed = task.passed_env(environ)
    return None if sets_exit_code({**passed, **task.env}) else secrets.choice(EXIT_CODES)


def report_options(env: Mapping[str, str], folder: str, code: int | None) -> dict[str, str]:
    """The six variables for a case whose environment is otherwise `env`: each one's own value,
    then `log_path` into `folder`, then `exitcode=code` (none when `code` is None or `env`
    sets one)."""
    ours = f"log_path={folder}/{PREFIX}"
    if code is not None and not sets_exit_code(env):
        ours += f":exitcode={code}"
    return {name: ":".join(filter(None, [env.get(name, ""), ours])) for name in VARIABLES}
