"""A new task's skeleton (`ssebench new DIR`), and what `validate` says while it is one.

The skeleton is a task that loads: every task.toml key is there, commented, and each check runs
a placeholder that fails saying what belongs there. `validate` names each placeholder still in
task.toml, an empty fix and an empty source tree, before what the cases did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

PLACEHOLDER = "TODO(ssebench new)"
LIMITS = "processes = 4096, memory_mb = 16384, open_files = 65536, disk_mb = 20480, tree_mb = 8192"


def _todo(what: str) -> str:
    """A command that fails saying what belongs in its place (in single quotes: no `'`)."""
    return f"echo '{PLACEHOLDER}: {what}' >&2; exit 1"


TASK_TOML = f"""\
# An ssebench task, written by `ssebench new`: docs/tasks.md explains every key. Fill in each
# {PLACEHOLDER}, put the project in src/ and the reference fix in fix.patch, then run
#   ssebench validate --task <this folder> --fix <this folder>/fix.patch --runs 3

# The tree the agent edits, relative to this folder. It must not hold this folder.
source = "src"

# Task files every case may read, relative to this folder (files or folders).
# files = ["tools"]
# Added to every case's environment; $SSE_TASK_DIR and $SSE_SOURCE_DIR expand, nothing else.
# env = {{ ASAN_OPTIONS = "detect_leaks=0" }}
# More of ssebench's own environment a case may see (by name; default none).
# pass_env = ["CARGO_HOME"]
# An image's environment: ssebench's own value of each name wins where it has one.
# default_env = {{ GOFLAGS = "-mod=vendor" }}
# System paths a toolchain needs beyond /usr, /bin, /sbin, /lib*, /etc and /opt; $NAME is the
# folder the cases' environment names (a cache: $GOPATH).
# readable = ["/root/.pyenv"]
# Folders outside the tree that cases may write (an in-image build's output).
# writable = ["/out"]
# Paths of the tree a graded patch may not change (gitignore-style): put back before grading.
# protected = ["tests/**", "Makefile"]
# Cases may use the host's network and sockets.
# network = false
# What one case may use (the defaults; tree_mb: MB the agent's tree may hold, holes included).
# limits = {{ {LIMITS} }}
# The task's environment for `ssebench grade --backend docker`.
# image = "registry.example/tasks/my-task:1"

[checks.build]
# bash -c in the source tree; passes on exit status 0 within the timeout. A failed build stops
# every later check.
run = "{_todo("[checks.build] run: the command that builds the project")}"
timeout = 1800  # seconds a case may take; default 3600

[checks.pocs]
# Each case passes when it no longer triggers the bug: no sanitizer report, no fatal signal
# (SEGV, ABRT, BUS, FPE, ILL), no timeout. Give each input as $SSE_TASK_DIR/pocs/<name>.
files = ["pocs"]  # readable by cases only at the levels that run the PoCs (0 and 1)
cases = ["{_todo("[checks.pocs] cases: one command per PoC, on an input in pocs/")}"]
timeout = 60
# What counts as still triggering (sanitizer, signal and timeout are on by default), for the
# table or for one case given as {{ run = "...", triggered_if = {{ ... }} }}:
# triggered_if = {{ exit_codes = [1], output_regex = "Traceback \\\\(most recent call last\\\\)" }}

[checks.intent]
# The tests that came with the upstream fix: they fail as shipped and pass once fixed. When they
# pass, the functional tests count as passed unrun (level 0): make them test what those do too.
files = ["intent"]  # readable by cases only at level 0
run = "{_todo("[checks.intent] run: the intent tests, from intent/")}"

[checks.functional]
# The project's own tests: they pass as shipped and with the fix.
run = "{_todo("[checks.functional] run: the tests of the project itself")}"
"""

FILES = {
    "task.toml": TASK_TOML,
    "src/": "",
    "pocs/README.md": "The PoCs' inputs; [checks.pocs] names each as $SSE_TASK_DIR/pocs/NAME.\n",
    "intent/README.md": "The intent tests; [checks.intent] runs them from $SSE_TASK_DIR/intent.\n",
    "fix.patch": "",
}


def write_skeleton(folder: Path) -> list[str]:
    """The skeleton's files in `folder` (made, or empty); what it holds, in FILES' order."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        path = folder / name
        if name.endswith("/"):
            path.mkdir(exist_ok=True)
        else:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return list(dict.fromkeys(name.split("/")[0] for name in FILES))


def unfinished(
    commands: Mapping[str, Sequence[str]], source: Path, fix: bytes
) -> tuple[list[str], list[str]]:
    """What is left of a skeleton, as `validate`'s problems and warnings: placeholders still in
    each check's commands (by key), an empty fix, an empty source tree."""
    problems = [
        f"task.toml: [checks.{key}] is still the skeleton's placeholder: put the task's command "
        "there"
        for key, cases in commands.items()
        if any(PLACEHOLDER in command for command in cases)
    ]
    if not fix.strip():
        problems.append(
            "the fix is empty: give the reference fix, a diff of the source tree as `git diff` "
            "writes it"
        )
    warnings = [] if any(source.iterdir()) else [f"the source tree {source} is empty"]
    return problems, warnings
