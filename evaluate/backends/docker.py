"""`--backend docker`: a patch graded in a fresh container of its task's image.

The host does what needs the host: it reads task.toml and applies the patch to a scratch copy
with its own git, hardened as for a local grade (task images often have no git); a tree that is
only in the image is copied out of it first (imagetree.py). The container gets Docker's default
seccomp profile and capabilities, no network, the task folder read-only at its path on the host,
ssebench read-only (bundle.py), and the patched copy and the logs folder writable: the copy at
the tree's own path (`source`), where scripts that name it (OSS-Fuzz's build scripts name
/src/<project>) find it. The container is the copy: inside, on the image's python3, ssebench
grades that tree where it is (asked by a typed request: `grade --fresh-container`), confined as
on a host (Landlock: the default profile forbids the namespaces bubblewrap needs). It writes its
verdict, or why it has none, as one `Ended` record on stdout (evaluate/ended.py), which the host
reads with the model. `--init`, `--rm` and boot.py's lifeline see that a container never
outlives the grade that started it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ssebench.core.daemons.door import Task, patched_copy
from ssebench.core.errors import ConfigError, NoVerdict
from ssebench.core.stopping import stop_process
from ssebench.core.toolfiles import Graft
from ssebench.evaluate.backends import abi
from ssebench.evaluate.backends.abi import last_line
from ssebench.evaluate.backends.boot import ABI, REQUEST, SITE
from ssebench.evaluate.backends.bundle import cache_dir, ensure_bundle
from ssebench.evaluate.backends.imagetree import on_this_machine
from ssebench.evaluate.ended import read_ended
from ssebench.evaluate.verdicts import PatchGrade


class GradeFresh(Protocol):
    """What the grade in a fresh container is asked (the command line's typed request: the
    child ssebench in the container reads it back): where its logs go, and its JSON."""

    @property
    def logs(self) -> Path | None: ...

    def model_dump_json(self) -> str: ...


BOOT = f"{SITE}/ssebench/evaluate/backends/boot.py"
ANSWER_SECONDS = 60.0  # docker's own answers: version, inspect
STOP_SECONDS = 10.0  # a container told to stop (its grade interrupted) gets this long
EXIT_INTERNAL = 3
_CONTAINER_NOT_RUN = {125: "docker could not run it", 126: "python3 cannot run", 127: "no python3"}


def docker_cli() -> str:
    """The `docker` command, or one line saying it is missing."""
    found = shutil.which("docker")
    if found is None:
        raise ConfigError("--backend docker needs Docker, and there is no `docker` command")
    return found


def _ask(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=ANSWER_SECONDS)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"--backend docker: `{' '.join(argv[1:3])}` got no answer") from None


def check_docker(docker: str) -> None:
    """One line, before anything is graded, when Docker does not answer."""
    done = _ask([docker, "version", "--format", "{{.Server.Version}}"])
    if done.returncode != 0:
        raise ConfigError(f"--backend docker: Docker is not running ({last_line(done.stderr)})")


def image_id(docker: str, image: str) -> str:
    """The image's ID: what the containers run, so a tag moved meanwhile changes nothing."""
    done = _ask([docker, "image", "inspect", "--format", "{{.Id}}", image])
    if done.returncode != 0:
        check_docker(docker)
        raise ConfigError(
            f"--backend docker: no image {image!r} on this machine (ssebench pulls nothing: "
            "build or load it first)"
        )
    return done.stdout.strip()


@dataclass(frozen=True)
class InImage:
    """A task to grade in its image: Docker, the image's ID (what the containers run, so a tag
    moved meanwhile changes nothing), ssebench's copy for the image's python3, and the task as
    this machine reads it (`here`: its tree copied out of the image when it is only there)."""

    task: Task
    docker: str
    ident: str
    site: Path
    compiled: Path
    here: Task


def in_image(task: Task) -> InImage:
    """Everything a grade in `task`'s image needs, found before anything is graded."""
    if task.image is None:
        raise ConfigError(
            f"{task.path}: names no image; --backend docker grades in the task's image "
            '(image = "NAME" in task.toml)'
        )
    docker = docker_cli()
    ident = image_id(docker, task.image)
    cache = cache_dir()
    bundle = ensure_bundle(cache)
    python = abi.image_python(docker, task.image, ident, cache)
    compiled = abi.compiled_part(bundle, python, task.image)
    here = on_this_machine(task, docker, ident, cache)
    return InImage(task, docker, ident, bundle.site, compiled, here)


def grade_in_image(
    graded: InImage,
    patch: bytes | None,
    request: GradeFresh,
    *,
    graft: Graft | None = None,
) -> PatchGrade:
    """The verdict of `patch` (None: the tree as shipped) on the task, graded in its image by
    `request` (its logs folder absolute: Docker mounts those only). PatchError when the patch
    does not apply; NoVerdict when the grade gave none (its cause is on stderr). What the grade
    does to the patch first is done here (added to `graft`); the patched copy is the
    container's tree, at the tree's own path, where the container's grade takes it."""
    task, logs = graded.task, request.logs
    with patched_copy(graded.here, patch, graft) as copy:
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)
        mounts = [
            (task.directory, task.directory, True),
            (copy, task.source, False),
            (graded.site, Path(SITE), True),
            (graded.compiled, Path(ABI), True),
            *([(logs, logs, False)] if logs is not None else []),
        ]
        # What the container's cases wrote here is given back to us, to read or remove.
        owner = f"{os.getuid()}:{os.getgid()}"
        argv = [*_run_flags(graded.docker, mounts), graded.ident, "-I", BOOT, owner, str(copy)]
        argv += [str(logs or ""), REQUEST, request.model_dump_json()]
        return _verdict(*_run(graded.docker, argv), str(task.image))


def _mount(source: Path, target: Path, readonly: bool) -> str:
    """--mount's CSV: a path holding a comma or a quote is quoted, never split."""
    fields = ["type=bind", f"source={source}", f"target={target}"]
    quoted = ['"' + f.replace('"', '""') + '"' if {",", '"'} & set(f) else f for f in fields]
    return ",".join(quoted + (["readonly"] if readonly else []))


def _run_flags(docker: str, mounts: list[tuple[Path, Path, bool]]) -> list[str]:
    argv = [docker, "run", "--rm", "--interactive", "--init", "--pull", "never"]
    argv += ["--network", "none", "--user", "0:0", "--workdir", "/", "--entrypoint", "python3"]
    argv += ["--name", f"ssebench-grade-{secrets.token_hex(6)}", "--label", "ssebench=grade"]
    for source, target, readonly in mounts:
        argv += ["--mount", _mount(source, target, readonly)]
    return argv


def _run(docker: str, argv: list[str]) -> tuple[int, bytes]:
    """Run the container; its exit status and stdout. Its stdin is the lifeline: kept open
    until it has ended, and closed (so it stops) when we are interrupted or die."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        output = proc.stdout.read()
        return proc.wait(), output
    finally:
        proc.stdin.close()  # the lifeline: the container stops itself
        name = argv[argv.index("--name") + 1]

        def kill_container() -> None:  # killing the client leaves the container running
            subprocess.run([docker, "kill", name], capture_output=True, timeout=ANSWER_SECONDS)

        stop_process(proc, STOP_SECONDS, signum=None, before_kill=kill_container)


def _verdict(code: int, output: bytes, image: str) -> PatchGrade:
    ended = read_ended(PatchGrade, output)
    if ended is not None and ended.verdict is not None:
        return ended.verdict
    if ended is not None and ended.error is not None:  # the grade inside said why, on stderr
        raise NoVerdict(ended.status, ended.error)
    why = _CONTAINER_NOT_RUN.get(code)
    error = f"the grade in {image} gave no verdict"
    if why is not None:
        error = f"{image}: {why} (exit status {code})"
    print(f"ssebench: error: {error}", file=sys.stderr)
    raise NoVerdict(EXIT_INTERNAL, error)
