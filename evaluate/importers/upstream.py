"""`import upstream`: a task of the public ssebench project (a folder with a `Dockerfile` and
`sse/`, or an image's `/ssebench` folder) as an ssebench task folder.

Its checks run as upstream runs them, in the source folder, its scripts directly (so their `#!`
line holds): build = `scripts/build.sh`; each PoC = `scripts/run.sh <the PoC's absolute path>`,
judged by exit status alone (0: no longer triggers); functional = `scripts/test.sh`; intent =
the hidden-test diff (`files.future_test`) applied to a copy of the tree in the case's own
folder, then `test.sh` there. The diff is applied as data: git runs with no repository,
configuration, attribute, hook or filter from the tree, and never in the agent's tree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import Field, StrictFloat, StrictInt, StrictStr, field_validator, model_validator

from ssebench.core.errors import ConfigError
from ssebench.core.tomltext import toml_array, toml_string
from ssebench.evaluate.importers.common import (
    BUILD_ENV,
    IMAGE_COMPONENT,
    OWN_NAMES,
    Imported,
    Records,
    Request,
    SourceError,
    Strict,
    image_path,
    plain_name,
    provenance,
    validated,
)
from ssebench.evaluate.importers.protection import protected_globs, protected_lines

REGISTRY = "ghcr.io/42-b3yond-6ug/ssebench"
TAG = "pilot-v1"  # the pilot dataset's version, upstream's default tag
UPSTREAM_ID = r"[A-Za-z0-9]+(?:(?:[._]|__|-+)[A-Za-z0-9]+)*"
RelPath = Annotated[str, Field(min_length=1)]
Scalar = StrictStr | StrictInt | StrictFloat | None  # metadata ssebench keeps but never reads
# A path we write into a command: nothing a shell would read as more than a name.
_COMMAND_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-/@%,=:")
INTENT = """\
set -eu
# The hidden tests (upstream: a fresh copy of the tree, the diff applied with git apply -p1),
# in this case's own folder: never in the tree the other checks see. git reads no repository,
# configuration, attribute, hook or filter of the tree: the diff is applied as data.
copy="$TMPDIR/$(basename "$PWD")"
cp -a . "$copy"
mkdir "$TMPDIR/no-repository"
cd "$copy"
GIT_DIR="$TMPDIR/no-repository" GIT_CEILING_DIRECTORIES="$TMPDIR" GIT_CONFIG_NOSYSTEM=1 \\
    GIT_CONFIG_GLOBAL=/dev/null GIT_ATTR_NOSYSTEM=1 \\
    git apply -p1 --whitespace=nowarn "$SSE_TASK_DIR/{diff}"
exec "$SSE_TASK_DIR/{test}"
"""


class Description(Strict):
    issue: StrictStr | None = None
    crash_report: list[RelPath] | None = None
    bug_description: StrictStr | None = None

    @model_validator(mode="after")
    def _one(self) -> Description:
        if self.issue is None and self.crash_report is None and self.bug_description is None:
            raise ValueError("needs at least one of issue, crash_report, bug_description")
        return self


class Scripts(Strict):
    build: RelPath | None = None
    run: RelPath | None = None
    test: RelPath | None = None


class Files(Strict):
    patch: RelPath | None = None
    poc: list[RelPath] | None = None
    future_test: RelPath | None = None
    security_test: RelPath | None = None
    intent_test: RelPath | None = None


class Config(Strict):
    id: StrictStr
    project: StrictStr
    repository: StrictStr
    language: Literal["c", "go", "rust"]
    source: StrictStr
    task_description: Description
    scripts: Scripts
    files: Files
    sanitizer: Scalar = None
    type: Scalar = None
    binary: Scalar = None
    trigger_commit: Scalar = None
    patch_commit: Scalar = None
    reference: list[StrictStr] | None = None
    originality: Literal["public", "crafted"] | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not re.fullmatch(UPSTREAM_ID, value) or len(value) > 128:
            raise ValueError(
                f"not an upstream task id: letters and digits joined by ., _, __ or -, at most "
                f"128 characters (got {value!r})"
            )
        return value

    @field_validator("repository")
    @classmethod
    def _https(cls, value: str) -> str:
        if not re.fullmatch(r"https://\S+", value):
            raise ValueError(f"must be an https:// URL (got {value!r})")
        return value


class _Loader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no types
    """YAML as data (no tags run), a key given twice refused rather than the last one kept."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[object, object]:
        keys = [self.construct_object(key, deep=deep) for key, _ in node.value]
        for key in keys:
            if keys.count(key) > 1:
                twice = f"{key!r} is given twice"
                raise yaml.constructor.ConstructorError(None, None, twice, node.start_mark)
        mapping: dict[object, object] = super().construct_mapping(node, deep=deep)
        return mapping


class _Folder:
    """Where a config's paths lie: relative to /ssebench in the image, which a task folder's
    Dockerfile makes of `sse/` (its scripts moved from `sse/` to `scripts/`)."""

    def __init__(self, given: Path) -> None:
        if (given / "sse" / "config.yaml").is_file():
            if not (given / "Dockerfile").is_file():
                raise SourceError(str(given), "", "an upstream task folder has a Dockerfile")
            self.root, self.task_folder = given / "sse", True
        elif (given / "config.yaml").is_file():
            self.root, self.task_folder = given, False
        else:
            why = "neither an upstream task folder (Dockerfile, sse/config.yaml) nor an image's "
            raise SourceError(str(given), "", why + "/ssebench folder (config.yaml)")
        self.config = self.root / "config.yaml"
        self.root = self.root.resolve()

    def file(self, raw: str, key: str) -> bytes:
        """The file a config path names: inside the folder, by any link, or one line."""
        if raw.startswith("/") or not set(raw) <= _COMMAND_SAFE:
            why = f"must be a relative path of plain names (got {raw!r})"
            raise SourceError(str(self.config), key, why)
        tries = [raw]
        if self.task_folder and raw.startswith("scripts/"):
            tries.append(raw.removeprefix("scripts/"))
        for candidate in tries:
            path = (self.root / candidate).resolve()
            if not path.is_relative_to(self.root):
                raise SourceError(str(self.config), key, f"{raw} leaves the task folder")
            if path.is_file():
                return path.read_bytes()
        raise SourceError(str(self.config), key, f"{raw}: no such file in {self.root}")


def read_config(folder: _Folder) -> tuple[Config, bytes]:
    raw = folder.config.read_bytes()
    try:
        data = yaml.load(raw, Loader=_Loader)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SourceError(str(folder.config), "", f"not valid YAML: {problem}{line}") from None
    return validated(Config, data, str(folder.config)), raw


def read(request: Request) -> Records:
    """One task: an upstream task folder or an image's /ssebench folder (`--source`, the tree
    on this machine; `--image`, the case image)."""
    if not request.path.is_dir():
        raise ConfigError(f"{request.path}: no such folder (an upstream task folder, or /ssebench)")
    source = request.source
    if source is not None and not source.is_dir():
        raise ConfigError(f"--source {source}: no such folder")

    def one() -> Iterator[Imported | SourceError]:
        try:
            here = source.resolve() if source is not None else None
            yield import_upstream(request.path, source=here, image=request.image)
        except SourceError as exc:
            yield exc

    return Records(one(), total=1)


def import_upstream(given: Path, *, source: Path | None, image: str | None) -> Imported:
    folder = _Folder(given)
    config, raw = read_config(folder)
    where = str(folder.config)
    if folder.task_folder and config.id != given.resolve().name:
        raise SourceError(where, "id", f"{config.id} is not the folder's name ({given.name})")
    in_image = image_path(config.source, where, "source")
    task = Imported(config.id, "")
    task.add("upstream/config.yaml", raw)
    if folder.task_folder:
        task.add("upstream/Dockerfile", (given / "Dockerfile").read_bytes())
    scripts = {  # run directly: their #! line holds
        key: _add(folder, task, path, f"scripts.{key}", script=True)
        for key, path in _scripts(config)
    }
    checks = _checks(folder, config, task, scripts)
    fix = task.files["fix.patch"][0] if "fix.patch" in task.files else None
    what = f"upstream ssebench task {config.id} ({config.project}, {config.language})"
    lines = [
        provenance("upstream", str(given.resolve()), what, "upstream/").rstrip("\n"),
        f"source = {toml_string(str(source) if source is not None else in_image)}",
        f"image = {toml_string(image or _image(given, config, where))}",
        # No secret: the agent's image has them in /ssebench. Every check reads them.
        *([toml_array(list(scripts.values()), "files")] if scripts else []),
        "# The image's build variables (a case's environment is an allow-list).",
        toml_array(list(BUILD_ENV), "pass_env"),
        protected_lines(protected_globs(source, fix)).rstrip("\n"),
    ]
    task.toml = "\n".join(lines) + "\n" + "".join(checks)
    return task


def _scripts(config: Config) -> list[tuple[str, str]]:
    named = [("build", config.scripts.build), ("run", config.scripts.run)]
    return [(key, path) for key, path in [*named, ("test", config.scripts.test)] if path]


def _checks(folder: _Folder, config: Config, task: Imported, copied: dict[str, str]) -> list[str]:
    """Each check's table (its scripts `copied` to the task folder), its files added to `task`."""
    config_file = str(folder.config)
    if config.files.patch:
        task.add("fix.patch", folder.file(config.files.patch, "files.patch"))
    for key in ("security_test", "intent_test"):  # kept for reference, not graded
        if (path := getattr(config.files, key)) is not None:
            task.add(f"upstream/{path}", folder.file(path, f"files.{key}"))
    for index, path in enumerate(config.task_description.crash_report or []):
        task.add(f"upstream/{path}", folder.file(path, f"task_description.crash_report.{index}"))
    tables = []
    if "build" in copied:
        tables.append(f"\n[checks.build]\nrun = {toml_string(_run(copied['build']))}\n")
    pocs = [_add(folder, task, p, f"files.poc.{i}") for i, p in enumerate(config.files.poc or [])]
    if pocs:
        if "run" not in copied:
            raise SourceError(config_file, "files.poc", "PoCs need scripts.run")
        cases = [f"{_run(copied['run'])} {_run(path)}" for path in pocs]
        tables.append(
            "\n# Judged as upstream judges them, by run.sh's exit status (0: no longer triggers),\n"
            "# and by a sanitizer's report, which reaches the log whatever run.sh reads.\n"
            f"[checks.pocs]\n{toml_array(pocs, 'files')}\n"
            f"{toml_array(cases, 'cases', one_a_line=True)}\n"
            "triggered_if = { passing_exit_codes = [0] }\n"
        )
    if config.files.future_test:
        if "test" not in copied:
            raise SourceError(config_file, "files.future_test", "needs scripts.test")
        diff = _add(folder, task, config.files.future_test, "files.future_test")
        command = INTENT.format(diff=diff, test=copied["test"])
        files = toml_array([diff], "files")
        tables.append(f"\n[checks.intent]\n{files}\nrun = '''\n{command}'''\n")
    if "test" in copied:
        tables.append(f"\n[checks.functional]\nrun = {toml_string(_run(copied['test']))}\n")
    return tables


def _add(folder: _Folder, task: Imported, path: str, key: str, *, script: bool = False) -> str:
    """Copy a file the config names to the same path in the task folder."""
    name = os.path.normpath(path)
    if name in OWN_NAMES or name.startswith("upstream/") or name in ("..", "."):
        why = f"{path}: the imported task keeps a file of its own there"
        raise SourceError(str(folder.config), key, why)
    task.add(name, folder.file(path, key), script=script)
    return name


def _run(path: str) -> str:
    return f'"$SSE_TASK_DIR/{path}"'


def _image(given: Path, config: Config, where: str) -> str:
    """Upstream's name for the case image: <registry>/case/<dataset>/<id>, in lower case."""
    dataset = given.resolve().parent.name.lower()
    if not given.joinpath("Dockerfile").is_file() or not IMAGE_COMPONENT.fullmatch(dataset):
        raise SourceError(where, "", "cannot tell the task's image from its folder: give --image")
    plain_name(config.id.lower(), where, "id", IMAGE_COMPONENT)
    return f"{REGISTRY}/case/{dataset}/{config.id.lower()}:{TAG}"
