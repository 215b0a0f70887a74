"""`ssebench new DIR`: a commented skeleton task for an author to fill in (evaluate/skeleton.py)."""

from __future__ import annotations

import argparse
import shlex

from ssebench.core.cli.parser import EXIT_OK
from ssebench.core.cli.root import Root
from ssebench.core.errors import ConfigError
from ssebench.evaluate.skeleton import write_skeleton

WHAT = {
    "task.toml": "every key, commented; each check runs a placeholder that says what goes there",
    "src": "the source tree the agent edits: put the project here",
    "pocs": "the PoCs' inputs",
    "intent": "the intent tests",
    "fix.patch": "the reference fix (empty): a diff of src/, as `git diff` writes it",
}


def cmd_new(args: argparse.Namespace, root: Root) -> int:
    folder = args.dir
    try:
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise ConfigError(f"{folder}: already there and not an empty folder; name a new one")
        written = write_skeleton(folder)
    except OSError as exc:
        raise ConfigError(f"{folder}: cannot write the task: {exc.strerror or exc}") from None
    print(f"ssebench: a skeleton task in {folder}:")
    for name in written:
        shown = name + ("/" if (folder / name).is_dir() else "")
        print(f"  {shown:<10} {WHAT[name]}")
    here = shlex.quote(str(folder))
    print(
        f"Fill it in (docs/tasks.md explains each key), then: ssebench validate --task {here} "
        f"--fix {here}/fix.patch"
    )
    return EXIT_OK
