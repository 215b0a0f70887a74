"""An upstream task's config.yaml and the folder it lies in: a task folder (`Dockerfile` and
`sse/`) or an image's `/ssebench` folder, read strictly, every path it names kept inside it.

config.yaml's paths are relative to /ssebench in the image, which a task folder's Dockerfile
makes of `sse/` (its scripts moved from `sse/` to `scripts/`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import Field, StrictFloat, StrictInt, StrictStr, field_validator, model_validator

from ssebench.evaluate.importers.common import SourceError, Strict, validated

UPSTREAM_ID = r"[A-Za-z0-9]+(?:(?:[._]|__|-+)[A-Za-z0-9]+)*"
RelPath = Annotated[str, Field(min_length=1)]
Scalar = StrictStr | StrictInt | StrictFloat | None  # metadata ssebench keeps but never reads
# A path we write into a command: nothing a shell would read as more than a name.
COMMAND_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-/@%,=:")


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


class TaskFolder:
    """Where a config's paths lie: relative to /ssebench in the image, which a task folder's
    Dockerfile makes of `sse/` (its scripts moved from `sse/` to `scripts/`)."""

    def __init__(self, given: Path) -> None:
        self.dockerfile: str | None = None
        if (given / "sse" / "config.yaml").is_file():
            if not (given / "Dockerfile").is_file():
                raise SourceError(str(given), "", "an upstream task folder has a Dockerfile")
            self.root, self.task_folder = given / "sse", True
            self.dockerfile = (given / "Dockerfile").read_text(encoding="utf-8", errors="replace")
        elif (given / "config.yaml").is_file():
            self.root, self.task_folder = given, False
        else:
            raise SourceError(str(given), "", NOT_UPSTREAM)
        self.config = self.root / "config.yaml"
        self.root = self.root.resolve()

    def file(self, raw: str, key: str) -> bytes:
        """The file a config path names: inside the folder, by any link, or one line."""
        if raw.startswith("/") or not set(raw) <= COMMAND_SAFE:
            why = f"must be a relative path of plain names (got {raw!r})"
            raise SourceError(str(self.config), key, why)
        tries = [raw]
        if self.task_folder and raw.startswith("scripts/"):
            tries.append(raw.removeprefix("scripts/"))
        for candidate in tries:
            path = self._inside(candidate, raw, key)
            if path.is_file():
                return path.read_bytes()
        raise SourceError(str(self.config), key, f"{raw}: no such file in {self.root}")

    def _inside(self, candidate: str, raw: str, key: str) -> Path:
        path = (self.root / candidate).resolve()
        if not path.is_relative_to(self.root):
            raise SourceError(str(self.config), key, f"{raw} leaves the task folder")
        return path

    def folder_files(self, top: str, key: str) -> Iterator[tuple[str, bytes, bool]]:
        """Every file in the folder `top` (its path in the folder, its bytes, whether it is
        executable), links followed where they stay inside; a link to a folder is refused."""
        for here, folders, names in os.walk(self._inside(top, top, key)):
            relative = Path(here).relative_to(self.root)
            for name in sorted(folders):
                if os.path.islink(Path(here) / name):
                    why = f"{relative / name}: a link to a folder in the PoC's folder"
                    raise SourceError(str(self.config), key, why)
            for name in sorted(names):
                path = str(relative / name)
                if not set(path) <= COMMAND_SAFE:
                    why = f"{path}: a PoC's folder holds plain names only"
                    raise SourceError(str(self.config), key, why)
                real = self._inside(path, path, key)
                yield path, self.file(path, key), bool(real.stat().st_mode & 0o111)


NOT_UPSTREAM = (
    "neither an upstream task folder (Dockerfile, sse/config.yaml), an image's /ssebench folder "
    "(config.yaml), a dataset folder of task folders (datasets/pilot) nor a checkout (datasets/)"
)


def task_folders(given: Path) -> list[Path]:
    """The upstream tasks `given` holds: itself (a task folder, an image's /ssebench), each task
    folder of a dataset folder (datasets/pilot), or of every dataset of a checkout."""
    if (given / "sse" / "config.yaml").is_file() or (given / "config.yaml").is_file():
        return [given]
    datasets = [given]
    if (given / "datasets").is_dir():
        datasets = sorted(p for p in (given / "datasets").iterdir() if p.is_dir())
    found = [
        child
        for dataset in datasets
        for child in sorted(dataset.iterdir())
        if child.is_dir() and (child / "sse").is_dir()
    ]
    if not found:
        raise SourceError(str(given), "", NOT_UPSTREAM)
    return found


def read_config(folder: TaskFolder) -> tuple[Config, bytes]:
    raw = folder.config.read_bytes()
    try:
        data = yaml.load(raw, Loader=_Loader)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SourceError(str(folder.config), "", f"not valid YAML: {problem}{line}") from None
    return validated(Config, data, str(folder.config)), raw
