"""A copy of this ssebench written to a folder of one's choice, for an engine that brings it
into task images itself (a Kubernetes init container writing into an emptyDir, say): the same
copy `--backend docker` mounts, and git with the libraries it loads, since a grade applies
patches with git and task images often have none. boot.py runs it from /opt/ssebench.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ssebench.evaluate.backends.bundle import ensure_bundle

_GIT = """#!/bin/sh
# git as it is on the machine that wrote this copy, with its own libraries and loader
here=$(cd "$(dirname "$0")/.." && pwd)
exec "$here/git/lib/{loader}" --library-path "$here/git/lib" "$here/git/git" "$@"
"""


def bring_git(dest: Path) -> None:
    """git, with the libraries it loads and their loader, into `dest` (run as `dest/bin/git`):
    a grade applies patches with git, and task images often have none. Nothing when this
    machine has no git either."""
    git = shutil.which("git")
    if git is None:
        return
    listed = subprocess.run(["ldd", git], capture_output=True, text=True, check=True).stdout
    libraries = re.findall(r"(/\S+) \(0x", listed)  # each `=> /path (0x...)`, the loader too
    (dest / "git" / "lib").mkdir(parents=True, exist_ok=True)
    for library in libraries:
        shutil.copy2(library, dest / "git" / "lib" / Path(library).name)
    shutil.copy2(git, dest / "git" / "git")
    loader = next(Path(lib).name for lib in libraries if "/ld-" in lib)
    (dest / "bin").mkdir(exist_ok=True)
    (dest / "bin" / "git").write_text(_GIT.format(loader=loader))
    (dest / "bin" / "git").chmod(0o755)


def main(argv: list[str]) -> int:
    """`python -m ssebench.evaluate.backends.export DEST`: this ssebench's copy written to DEST
    (`site/`, `abi/<EXT_SUFFIX>/`, and git in `bin/`), for an engine that brings it into task
    images itself (a Kubernetes init container, say); boot.py then runs it from /opt/ssebench."""
    if len(argv) != 1:
        print("usage: python -m ssebench.evaluate.backends.export DEST", file=sys.stderr)
        return 2
    made = ensure_bundle(Path(tempfile.mkdtemp(prefix="ssebench-bundle-")))
    shutil.copytree(made.root, argv[0], symlinks=True, dirs_exist_ok=True)
    shutil.rmtree(made.root.parent.parent, ignore_errors=True)
    bring_git(Path(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
