"""An image's environment on a host (`default_env`) and the toolchain cache it names
(`readable = ["$NAME"]`), with real cases under each mechanism this machine has: a case gets the
task's default where the user set nothing and the user's value where they did, and reads the
cache that value names, though it lies in a folder locked to root, and no other."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ssebench.core.daemons.door import available
from ssebench.daemon.confine.user import case_user
from ssebench.testing.servers import clean_env, write_task

pytestmark = pytest.mark.timeout(180)

RunCli = Callable[..., subprocess.CompletedProcess[str]]
MECHANISMS = ["none", *available(case_user())] if os.geteuid() == 0 else ["none"]
BUILD = 'echo "GOFLAGS=$GOFLAGS"; cat "$CACHE/note"'


def _caches(root: Path) -> tuple[Path, Path]:
    """Two caches in a folder only root may enter, each with a note only root may read."""
    locked = root / "locked"
    for name in ("image", "user"):
        (locked / name).mkdir(parents=True)
        (locked / name / "note").write_text(f"the {name}'s cache\n")
        (locked / name / "note").chmod(0o600)
    locked.chmod(0o700)
    return locked / "image", locked / "user"


def _build_log(run_cli: RunCli, task: Path, tmp_path: Path, mechanism: str, **env: str) -> str:
    logs = tmp_path / f"logs-{len(list(tmp_path.glob('logs-*')))}"
    isolation = ["--no-isolation"] if mechanism == "none" else ["--isolation", mechanism]
    given = {k: v for k, v in clean_env(tmp_path).items() if k not in ("GOFLAGS", "CACHE")}
    done = run_cli("grade", "--task", str(task), "--patch", os.devnull, "--logs", str(logs),
                   "--quiet", *isolation, env={**given, **env})  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return (logs / "build-0.log").read_text()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_the_default_or_the_users_value_and_the_cache_it_names(
    run_cli: RunCli, tmp_path: Path, mechanism: str
) -> None:
    image, user = _caches(tmp_path)
    toml = (
        f'default_env = {{ GOFLAGS = "-mod=vendor", CACHE = "{image}" }}\n'
        'readable = ["$CACHE"]\n'
        f"[checks.build]\nrun = {json.dumps(BUILD)}\n"
    )
    task = write_task(tmp_path / "task", toml)
    as_shipped = _build_log(run_cli, task, tmp_path, mechanism)
    assert as_shipped == "GOFLAGS=-mod=vendor\nthe image's cache\n"
    cleared = _build_log(run_cli, task, tmp_path, mechanism, GOFLAGS="", CACHE="")
    assert cleared.startswith("GOFLAGS=\ncat: /note: No such file or directory")
    users = _build_log(run_cli, task, tmp_path, mechanism, GOFLAGS="-mod=mod", CACHE=str(user))
    assert users == "GOFLAGS=-mod=mod\nthe user's cache\n"


@pytest.mark.parametrize("mechanism", [m for m in MECHANISMS if m != "none"])
def test_no_other_cache_is_readable(run_cli: RunCli, tmp_path: Path, mechanism: str) -> None:
    """The grant follows the value: with the user's cache named, the image's (the default,
    which a case could name by path) stays out of reach, as does any cache without `$NAME`."""
    image, user = _caches(tmp_path)
    build = f"cat {image}/note || echo refused"
    toml = (
        f'default_env = {{ CACHE = "{image}" }}\nreadable = ["$CACHE"]\n'
        f"[checks.build]\nrun = {json.dumps(build)}\n"
    )
    task = write_task(tmp_path / "task", toml)
    assert _build_log(run_cli, task, tmp_path, mechanism, CACHE=str(user)).endswith("refused\n")
    ungranted = write_task(tmp_path / "ungranted", toml.replace('readable = ["$CACHE"]\n', ""))
    assert _build_log(run_cli, ungranted, tmp_path, mechanism).endswith("refused\n")
    granted = _build_log(run_cli, task, tmp_path, mechanism)
    assert granted == "the image's cache\n"  # the control: the same command, granted
