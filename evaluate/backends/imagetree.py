"""A task's tree that is only in its image (`source = "/src/jq"` of an imported benchmark task),
copied out to this machine once per image, so a grade in Docker is made as any other: the patch
applied here with our own git, the protected paths put back from the pristine tree, the signals
read from it, and the patched copy mounted at the tree's own path in the container.

`docker cp` from a container that is created and never started copies the tree as data (its
links as links, nothing of it run) into a folder of ours, named by the image's ID: a tag moved
to a rebuilt image gets a copy of its own, and a copy is complete or absent (made aside, then
renamed). Copies unused for a day go, as bundles do.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from ssebench.core.daemons.door import Task
from ssebench.core.errors import ConfigError
from ssebench.evaluate.backends.abi import last_line
from ssebench.evaluate.backends.bundle import prune_unused

COPY_SECONDS = 3600.0  # a tree of a few GB copies in minutes; no answer in an hour is a fault


def _docker(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=COPY_SECONDS)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"--backend docker: `{' '.join(argv[1:3])}` got no answer") from None


def image_tree(docker: str, image: str, ident: str, source: Path, cache: Path) -> Path:
    """The tree at `source` in the image `ident` (named `image`), as a folder of this machine."""
    trees = cache / "trees"
    folder = trees / ident.removeprefix("sha256:")[:24]  # one per image
    root = folder / source.relative_to("/")
    done = root.parent / f".{root.name}.complete"
    if not done.exists():
        trees.mkdir(parents=True, exist_ok=True)
        prune_unused(trees)
        _copy_out(docker, image, ident, source, root, done)
    with contextlib.suppress(OSError):
        os.utime(folder)  # in use: see prune_unused
    return root


def _copy_out(docker: str, image: str, ident: str, source: Path, root: Path, done: Path) -> None:
    name = f"ssebench-tree-{secrets.token_hex(6)}"
    made = _docker([docker, "create", "--pull", "never", "--network", "none", "--name", name,
                    "--label", "ssebench=tree", "--entrypoint", "true", ident])  # fmt: skip
    if made.returncode != 0:
        raise ConfigError(f"--backend docker: cannot read {image}: {last_line(made.stderr)}")
    root.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=root.parent))
    try:
        copied = _docker([docker, "cp", f"{name}:{source}/.", str(partial)])
        partial.chmod(0o755)  # mkdtemp's 0700 is no tree's
        if copied.returncode != 0:
            why = last_line(copied.stderr)
            raise ConfigError(
                f"--backend docker: the task's source {source} is neither on this machine nor "
                f"in its image {image} ({why})"
            )
        with contextlib.suppress(OSError):  # another grade copied it first: keep theirs
            os.rename(partial, root)
        done.touch()
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run([docker, "rm", "--force", name], capture_output=True, timeout=60)


def on_this_machine(task: Task, docker: str, ident: str, cache: Path) -> Task:
    """`task` as this machine reads it: its tree where it is, else copied out of its image."""
    if task.image is None or task.source.is_dir():
        return task
    tree = image_tree(docker, task.image, ident, task.source, cache)
    return task.model_copy(update={"source": tree})
