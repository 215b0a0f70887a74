"""A pristine copy of a task's source tree with a patch applied: what a grade runs on.

The evaluator grades what the agent produced, not a tree the agent's processes could still
touch, so a patch is applied to a copy in a scratch folder outside the task, and the task's
own tree is only ever read. The copy is `cp -a --reflink=auto` (1.3 to 2.2 times as fast as
`shutil.copytree` on 10,000 files, and a FIFO in the tree is recreated rather than read);
the patch goes through `git apply`, which takes what `git diff` writes, binary hunks, new
and deleted files included, and refuses paths that leave the tree or pass a symbolic link.

The tree is the agent's: a build may have planted `.git/config` with a filter, or
`.gitattributes`, that `git apply` would run or obey. So git runs with no repository at all
(GIT_DIR names an empty folder of ours: git then reads no configuration, hook, filter or
attribute from the tree), no user or system configuration, and as the tree's owner, so that
the files it writes belong to whoever the cases run as.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ssebench.core.errors import ConfigError, PatchError
from ssebench.core.patchparse import parse_patch
from ssebench.core.toolfiles import Graft, run_modules
from ssebench.daemon.guard import make_folder, remove_folder, remove_tree
from ssebench.daemon.protect import drop_outputs, order_times, revert_protected, rules_of
from ssebench.daemon.task import Task

ERROR_CHARS = 2000  # git names every failed hunk; one line of JSON stays readable
# Read no more of a patch than this: a real diff is far smaller, and `--patch /dev/zero` (or a
# binary given by mistake) must be one line, not a process that reads until memory runs out.
PATCH_LIMIT = 64 << 20


def copy_tree(source: Path, destination: Path) -> None:
    """`source`'s contents into the new folder `destination`, modes, times and links kept.

    Without GNU cp (busybox has no --reflink), or when it fails, Python copies instead; a
    failure of that (a full disk) is raised as OSError.
    """
    if shutil.which("cp") is not None:
        argv = ["cp", "-a", "--reflink=auto", "--", str(source), str(destination)]
        if subprocess.run(argv, capture_output=True).returncode == 0:
            return
        remove_tree(destination)
    shutil.copytree(source, destination, symlinks=True)
    if os.geteuid() == 0:  # cp -a keeps owners; the cases run as the tree's owner
        for folder, names, files in os.walk(destination):
            for name in (".", *names, *files):
                path = os.path.join(folder, name)
                info = os.lstat(os.path.join(source, os.path.relpath(path, destination)))
                os.lchown(path, info.st_uid, info.st_gid)


def one_line(message: str) -> str:
    """A tool's message as one line: its lines joined, git's `error: ` prefixes dropped."""
    lines = [line.strip().removeprefix("error: ") for line in message.splitlines()]
    text = "; ".join(line for line in lines if line)
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


def _git_env(no_repository: Path) -> dict[str, str]:
    """No repository (`no_repository` is an empty folder, not one: git works as outside any),
    none found above, and no user, system or environment configuration."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    return {
        **env,
        "GIT_DIR": str(no_repository),
        "GIT_CEILING_DIRECTORIES": str(no_repository.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1",
        "LC_ALL": "C",
    }


def apply_patch(tree: Path, patch: bytes, no_repository: Path | None = None) -> None:
    """Apply `patch` to `tree` (paths as `git diff` writes them, a/ and b/) as the tree's owner,
    reading nothing of the tree but the files it patches; an empty patch changes nothing.
    `no_repository` is an empty folder to give git as its repository (one is made beside the
    tree when not given). Raises PatchError with git's reason, as one line."""
    if not patch.strip():
        return
    if no_repository is None:
        with tempfile.TemporaryDirectory(prefix="ssebench-no-repository-") as empty:
            return apply_patch(tree, patch, Path(empty))
    git = shutil.which("git")
    if git is None:
        raise ConfigError("applying a patch needs git (`git apply`); install git")
    owner = os.stat(tree)
    as_owner = (
        {"user": owner.st_uid, "group": owner.st_gid, "extra_groups": []}
        if os.geteuid() == 0 and owner.st_uid != 0
        else {}
    )
    no_repository.mkdir(exist_ok=True)
    done = subprocess.run(
        [git, "apply", "--whitespace=nowarn", "-"],
        input=patch,
        cwd=tree,
        env=_git_env(no_repository),
        capture_output=True,
        **as_owner,  # type: ignore[call-overload]
    )
    if done.returncode != 0:
        reason = one_line(done.stderr.decode("utf-8", "replace"))
        if reason.startswith("No valid patches in input"):
            reason = "no diff in the patch (expected a unified diff, as `git diff` writes it)"
        raise PatchError(reason or f"git apply exited with status {done.returncode}")


def read_patch(path: Path) -> bytes:
    try:
        with path.open("rb") as file:
            patch = file.read(PATCH_LIMIT + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the patch: {exc.strerror or exc}") from None
    if len(patch) > PATCH_LIMIT:
        limit = f"{PATCH_LIMIT >> 20} MiB"
        raise ConfigError(f"{path}: cannot read the patch: over {limit}, too large for a diff")
    return patch


@contextlib.contextmanager
def patched_copy(task: Task, patch: bytes | None, graft: Graft | None = None) -> Iterator[Path]:
    """A scratch copy of `task`'s source with `patch` applied (None: as shipped), then made to
    keep to core/toolfiles.py's rules: build outputs of the patch dropped, protected paths (and
    what the patch may not add) put back as shipped, and every file the patch changed made newer
    than the rest (what was done is added to `graft`).

    The folder is removed afterwards, on an error or Ctrl+C too, and by the guard should this
    process be killed. PatchError (the patch does not apply) leaves nothing behind either.
    """
    scratch = make_folder("ssebench-grade-", reachable=True)
    try:
        if scratch.is_relative_to(task.directory) or scratch.is_relative_to(task.source):
            raise ConfigError(
                f"the scratch folder {scratch} is inside the task; set TMPDIR elsewhere"
            )
        copy = scratch / (task.source.name or "source")
        copy_tree(task.source, copy)
        if patch is not None:
            apply_patch(copy, patch, scratch / "no-repository")
            done = _keep_to_the_rules(task, copy, patch)
            if graft is not None:
                graft.reverted += done.reverted
                graft.dropped.update(done.dropped)
        yield copy
    finally:
        remove_folder(scratch, remove_tree)


def _keep_to_the_rules(task: Task, copy: Path, patch: bytes) -> Graft:
    touched = {p for diff in parse_patch(patch) if (p := diff.new) is not None}
    dropped = drop_outputs(task.source, copy, touched)
    rules = rules_of(task.source, task.protected, run_modules(task.commands()))
    reverted = revert_protected(task.source, copy, rules)
    order_times(copy, touched - set(dropped) - set(reverted))
    return Graft(reverted=reverted, dropped=dropped)
