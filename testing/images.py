"""Docker for tests and benchmarks: the task image `scripts/container.sh` builds, if it is here.

`ssebench-task:bookworm` is a task's environment as benchmarks ship one (python3, gcc, make; no
git, no ssebench); SSEBENCH_TASK_IMAGE names another. Nothing here imports pytest.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

TASK_IMAGE = os.environ.get("SSEBENCH_TASK_IMAGE") or "ssebench-task:bookworm"


def docker_missing(image: str = TASK_IMAGE) -> str | None:
    """Why grading in `image` cannot be tried on this machine; None when it can."""
    docker = shutil.which("docker")
    if docker is None:
        return "no docker command (scripts/container.sh installs Docker and builds the image)"
    done = subprocess.run([docker, "image", "inspect", image], capture_output=True, timeout=60)
    if done.returncode != 0:
        return f"no image {image}, or Docker is not running: run scripts/container.sh"
    return None


def containers_with(folder: Path) -> list[str]:
    """The running containers that mount `folder`: a grade's, found without knowing its name."""
    argv = ["docker", "ps", "-q", "--filter", f"volume={folder}", "--filter", "label=ssebench"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.split()


def with_image(task: Path, image: str = TASK_IMAGE) -> None:
    """Make the task at `task` name `image` (the examples name ssebench-task:bookworm)."""
    toml = task / "task.toml"
    lines = [line for line in toml.read_text().splitlines() if not line.startswith("image =")]
    toml.write_text(f'image = "{image}"\n' + "\n".join(lines) + "\n")


def build_image(tag: str, context: Path) -> None:
    """`docker build` of `context` as `tag`, offline (its FROM must be here already)."""
    argv = ["docker", "build", "--pull=false", "-q", "-t", tag, str(context)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def remove_image(tag: str) -> None:
    subprocess.run(["docker", "image", "rm", "--force", tag], capture_output=True, timeout=120)


def ssebench_in_image(
    image: str, args: Sequence[str], mounts: Sequence[str] = (), timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`ssebench ARGS` in a container of `image` as a task container runs it (root, Docker's
    default seccomp, no network), through boot.py on the image's python3: this ssebench
    mounted read-only, and `mounts` (`-v` values) beside it."""
    from ssebench.evaluate.backends.boot import ABI, SITE
    from ssebench.evaluate.backends.bundle import ensure_bundle, host_suffix
    from ssebench.evaluate.backends.docker import BOOT

    made = ensure_bundle()
    volumes = [f"{made.site}:{SITE}:ro", f"{made.abi(host_suffix())}:{ABI}:ro", *mounts]
    argv = ["docker", "run", "--rm", "--init", "--network", "none", "--entrypoint", "python3"]
    argv += [arg for volume in volumes for arg in ("-v", volume)]
    argv += [image, "-I", BOOT, "0:0", "", "--", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
