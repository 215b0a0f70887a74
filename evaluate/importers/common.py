"""What every importer shares: reading a source strictly (one line naming the file and the key),
and writing the task folders all at once or not at all.

An importer reads its source into `Imported` records (a task folder's id, task.toml's text and
its files) and hands them to `write_tasks`, which writes each into a folder of its own aside in
`OUT`, loads each back as every command would, and only then moves them to `OUT/<id>`: a bad
instance among a thousand, or a task.toml no command could load, leaves nothing written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ssebench.core.errors import ConfigError, plain_error
from ssebench.core.tomltext import toml_array, toml_string
from ssebench.evaluate.digests import ssebench_version
from ssebench.evaluate.importers.protection import protected_globs, protected_lines

# A Docker repository's path component: what a task id becomes in an image name.
IMAGE_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
PLAIN_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._+-]{0,126}[A-Za-z0-9])?")
# What an imported task keeps of its own beside the benchmark's files.
OWN_NAMES = ("task.toml", "fix.patch")
# A case's environment is an allow-list: these variables of the image's (OSS-Fuzz's base images
# set them for `compile`, toolchain images for go and cargo) reach its builds, nothing else.
BUILD_ENV = (
    *("SRC", "OUT", "WORK", "CC", "CXX", "CCC", "CFLAGS", "CXXFLAGS", "LDFLAGS"),
    *("LIB_FUZZING_ENGINE", "SANITIZER", "SANITIZER_FLAGS", "FUZZING_ENGINE"),
    *("FUZZING_LANGUAGE", "ARCHITECTURE", "MSAN_LIBS_PATH"),
    *("GOPATH", "GOROOT", "GOFLAGS", "GOTOOLCHAIN", "CGO_ENABLED"),
    *("CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "RUSTFLAGS"),
)


class SourceError(ConfigError):
    """A source an importer cannot take: `where` (the file, and the line of a JSON-lines
    file), the key, and what is wrong, as one line."""

    def __init__(self, where: str, key: str, problem: str) -> None:
        super().__init__(f"{where}: {key}: {problem}" if key else f"{where}: {problem}")


class Strict(BaseModel):
    """A source's record: unknown keys refused, no value coerced (`"1"` is not 1)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def first_problem(exc: ValidationError) -> tuple[str, str]:
    """The key and the problem a record reports: an unknown or missing key first."""
    errors = exc.errors()
    keyed = [e for e in errors if e["type"] in ("extra_forbidden", "missing")] or errors
    error = keyed[0]
    key = ".".join(str(part) for part in error["loc"])
    if error["type"] == "string_too_short":
        return key, "must not be empty"
    if error["type"] == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        return key, f"must be one of {expected} (got {error.get('input')!r})"
    return key, plain_error(error)


def validated(model: type[Strict], data: object, where: str) -> Any:
    """`data` as `model`, or one line naming `where` and the key."""
    if not isinstance(data, dict):
        raise SourceError(where, "", f"must be a mapping of keys (got {type(data).__name__})")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise SourceError(where, *first_problem(exc)) from None


def json_records(path: Path) -> Iterator[tuple[str, object]]:
    """The records of a JSON file (one object, or a list of them) or a JSON-lines file, each
    with where it is (`file`, `file:LINE`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise SourceError(str(path), "", f"cannot read: {why}") from None
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        yield str(path), whole
        return
    if isinstance(whole, list):
        yield from ((f"{path}: item {i}", item) for i, item in enumerate(whole))
        return
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise SourceError(str(path), "", "holds no record")
    for number, line in lines:
        try:
            yield f"{path}:{number}", json.loads(line)
        except ValueError as exc:
            raise SourceError(f"{path}:{number}", "", f"not JSON: {exc}") from None


def once(ids: dict[str, str], ident: str, where: str, key: str) -> str:
    """A task id not seen before in this source (`ids`: where each was seen)."""
    if ident in ids:
        raise SourceError(where, key, f"{ident} again (first at {ids[ident]}): ids name folders")
    ids[ident] = where
    return ident


def plain_name(value: str, where: str, key: str, pattern: re.Pattern[str] = PLAIN_NAME) -> str:
    """A task id as a folder's (and an image's) name: refused, in one line, when it is not."""
    if not pattern.fullmatch(value) or ".." in value:
        raise SourceError(where, key, f"not a plain name (got {value!r})")
    return value


def image_path(value: str, where: str, key: str) -> str:
    """An absolute, normalized path in an image (a source tree, say), never `/` itself."""
    if not value.startswith("/") or value == "/" or os.path.normpath(value) != value:
        why = f"must be an absolute path such as /src/project (got {value!r})"
        raise SourceError(where, key, why)
    return value


@dataclass
class Imported:
    """One task folder to write: its id (the folder's name), task.toml's text, its files (a
    path in the folder: the bytes, and whether the file is a script run directly), and what
    its importer tells the user of it (`notes`, a line each)."""

    id: str
    toml: str
    files: dict[str, tuple[bytes, bool]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, path: str, data: bytes, *, script: bool = False) -> None:
        self.files[path] = (data, script)


def provenance(command: str, where: str, what: str, beside: str) -> str:
    """task.toml's first lines: where the task came from, and its source's metadata beside."""
    return (
        f"# Imported by `ssebench import {command}` (ssebench {ssebench_version()}) from\n"
        f"# {where}: {what}.\n"
        f"# The source's own metadata is beside this file: {beside}.\n"
    )


def write_tasks(out: Path, tasks: list[Imported], load: Callable[[Path], object]) -> list[Path]:
    """Write every task under `out` (each `out/<id>`), all or none: each is written aside,
    loaded back with `load(path)` (a task.toml no command could take is a bug of ours, said in
    one line), and moved into place only when every one is."""
    seen: dict[str, int] = {}
    for index, task in enumerate(tasks):
        if task.id in seen:
            first, second = seen[task.id] + 1, index + 1
            raise ConfigError(
                f"records {first} and {second} are both task {task.id!r}: each needs a folder"
            )
        seen[task.id] = index
        if os.path.lexists(out / task.id):
            raise ConfigError(f"{out / task.id} exists: import into another --out, or remove it")
    try:
        out.mkdir(parents=True, exist_ok=True)
        aside = Path(tempfile.mkdtemp(prefix=".ssebench-import-", dir=out))
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot write there: {exc.strerror or exc}") from None
    try:
        for task in tasks:
            _write(aside / task.id, task)
            load(aside / task.id)
        written = []
        for task in tasks:
            os.rename(aside / task.id, out / task.id)
            written.append(out / task.id)
        return written
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot write there: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(aside)


def _write(folder: Path, task: Imported) -> None:
    folder.mkdir()
    (folder / "task.toml").write_text(task.toml, encoding="utf-8")
    for name, (data, script) in task.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o755 if script else 0o644)


def metadata_json(record: Mapping[str, Any]) -> bytes:
    """A source's own record, kept beside task.toml as it was read."""
    return (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode()


def read_records(
    path: Path, model: type[Strict], key: str, make: Callable[[Any, str, Any], Imported]
) -> list[Imported]:
    """A task of each record in `path` (as `model`, made by `make(record, where, raw)`); an
    id (the record's `key`) seen twice is refused."""
    tasks: list[Imported] = []
    ids: dict[str, str] = {}
    for where, raw in json_records(path):
        task = make(validated(model, raw, where), where, raw)
        once(ids, task.id, where, key)
        tasks.append(task)
    return tasks


@dataclass(frozen=True)
class PocRun:
    """How an OSS-Fuzz task's one PoC runs: its input (the PoC check's own file), its command
    and time limit, and how it is judged (`why`, a comment; `rule`, TOML after the table)."""

    input: str
    run: str
    seconds: int
    why: str
    rule: str


def oss_fuzz_toml(
    head: str, source: str, image: str, build: str, poc: PocRun, fix: bytes | None
) -> str:
    """task.toml of a task that OSS-Fuzz's `compile` builds in its image (`fix`: its reference
    fix, whose paths stay the agent's)."""
    return f"""\
{head}source = {toml_string(source)}
image = {toml_string(image)}
{protected_lines(protected_globs(None, fix)).rstrip()}
# OSS-Fuzz's compile reads the build script and what the image fetched under /src, and writes
# /out and /work.
readable = ["/src"]
writable = ["/out", "/work"]
# The image's build variables (a case's environment is an allow-list).
{toml_array(list(BUILD_ENV), "pass_env")}

[checks.build]
run = {toml_string(build)}

{poc.why}
[checks.pocs]
files = [{toml_string(poc.input)}]
run = {toml_string(poc.run)}
timeout = {poc.seconds}
{poc.rule}"""
