"""Docker for tests and benchmarks: the task image `scripts/container.sh` builds, if it is here.

`ssebench-task:bookworm` is a task's environment as benchmarks ship one (python3, gcc, make; no
git, no ssebench); SSEBENCH_TASK_IMAGE names another. Nothing here imports pytest.
"""

from __future__ import annotations

import os
import shutil
import subprocess
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
