"""task.toml's `default_env` (an image's environment, which the daemon's own value of a name
overrides) and `readable` entries `$NAME` (the folder a variable of the cases' environment
names on this machine), as the task loads them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ssebench.core.errors import ConfigError
from ssebench.core.registry import build_registry
from ssebench.daemon.sanitizers import exit_code
from ssebench.daemon.task import load_task

CHECKS = build_registry().checks


def _load(folder: Path, text: str) -> object:
    (folder / "src").mkdir(exist_ok=True)
    (folder / "task.toml").write_text(f'source = "src"\n{text}')
    return load_task(folder, CHECKS)


def _error(folder: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        _load(folder, text)
    return str(caught.value).removeprefix(f"{folder / 'task.toml'}: ")


def test_the_daemons_own_value_wins_and_the_default_fills_in(tmp_path: Path) -> None:
    task = _load(
        tmp_path,
        'default_env = { GOPATH = "/go", GOFLAGS = "-mod=vendor", KIT = "$SSE_TASK_DIR/kit" }\n'
        'pass_env = ["CARGO_HOME"]\n',
    )
    environ = {"GOPATH": "/home/me/go", "GOFLAGS": "", "CARGO_HOME": "/c", "SECRET": "x"}
    assert task.passed_env(environ, "/tree") == {  # type: ignore[attr-defined]
        "GOPATH": "/home/me/go",
        "GOFLAGS": "",  # a user may clear one
        "KIT": f"{tmp_path}/kit",
        "CARGO_HOME": "/c",
    }
    assert task.passed_env({}, "/tree") == {  # type: ignore[attr-defined]
        "GOPATH": "/go",
        "GOFLAGS": "-mod=vendor",
        "KIT": f"{tmp_path}/kit",
    }


def test_a_default_that_sets_the_sanitizers_status_is_the_tasks_own(tmp_path: Path) -> None:
    task = _load(tmp_path, 'default_env = { ASAN_OPTIONS = "exitcode=7" }\n')
    assert exit_code(task, {}) is None  # type: ignore[arg-type]
    assert exit_code(task, {"ASAN_OPTIONS": "detect_leaks=0"}) is not None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('env = { A = "1" }\ndefault_env = { A = "2" }\n',
         "default_env.A: env sets it too, and env always wins"),
        ('default_env = { SSE_X = "1" }\n', "default_env.SSE_X: SSE_ variables are ssebench's own"),
        ("default_env = { A = 1 }\n", "default_env.A: must be a variable name with a string value"),
        ('readable = ["$GOPATH"]\n',
         "readable: $GOPATH: names no variable of the cases' environment (env, default_env, "
         "pass_env)"),
        ('readable = ["$GOPATH/pkg"]\n',
         "readable: $GOPATH/pkg: a variable is $NAME, the whole entry"),
        ('default_env = { C = "cache" }\nreadable = ["$C"]\n',
         "readable: $C is cache: cases read it by an absolute path only"),
        ('default_env = { C = "/" }\nreadable = ["$C"]\n',
         "readable: $C is /: that is the whole machine"),
        ('default_env = { C = "$SSE_TASK_DIR" }\nreadable = ["$C"]\n',
         "readable: $C is {tmp}: in the task folder, whose files are granted by level"),
        ('env = { C = "{tmp}/cache" }\nreadable = ["$C"]\n',
         "readable: $C is {tmp}/cache: in the task folder, whose files are granted by level"),
    ],
)  # fmt: skip
def test_mistakes_are_one_line(tmp_path: Path, text: str, error: str) -> None:
    (tmp_path / "cache").mkdir()
    text, error = (part.replace("{tmp}", str(tmp_path)) for part in (text, error))
    assert _error(tmp_path, text) == error


def test_a_variable_entry_is_the_folders_it_names_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task_folder, caches = tmp_path / "task", tmp_path / "caches"
    task_folder.mkdir()
    for name in ("go", "mod", "cargo", "rustup"):
        (caches / name).mkdir(parents=True)
    text = (
        f'default_env = {{ GOPATH = "/nowhere-go", GOMODCACHE = "{caches}/mod" }}\n'
        f'env = {{ RUSTUP_HOME = "{caches}/rustup" }}\npass_env = ["CARGO_HOME"]\n'
        'readable = ["$GOPATH", "$GOMODCACHE", "/usr/share", "$CARGO_HOME", "$RUSTUP_HOME"]\n'
    )
    monkeypatch.delenv("GOPATH", raising=False)
    monkeypatch.delenv("CARGO_HOME", raising=False)
    monkeypatch.setenv("GOMODCACHE", f"{caches}/nowhere")  # the daemon's own value wins
    found = _load(task_folder, text).readable  # type: ignore[attr-defined]
    assert found == (Path("/usr/share"), caches / "rustup")
    monkeypatch.setenv("GOPATH", f"{caches}/go::{caches}/gone:{caches}/go/")
    monkeypatch.setenv("GOMODCACHE", f"{caches}/mod")
    monkeypatch.setenv("CARGO_HOME", f"{caches}/cargo")
    found = _load(task_folder, text).readable  # type: ignore[attr-defined]
    assert found == (
        caches / "go", caches / "mod", Path("/usr/share"), caches / "cargo", caches / "rustup"
    )  # fmt: skip
    assert os.environ["GOPATH"].startswith(str(caches))
