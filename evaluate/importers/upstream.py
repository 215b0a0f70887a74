"""`import upstream`: tasks of the public ssebench project (a folder with a `Dockerfile` and
`sse/`, an image's `/ssebench` folder, a dataset folder of task folders, or a checkout's
`datasets/`) as ssebench task folders.

Its checks run as upstream runs them, in the source folder, its scripts directly (so their `#!`
line holds): build = `scripts/build.sh`; each PoC = `scripts/run.sh <the PoC's absolute path>`,
judged by exit status alone (0: no longer triggers), the PoC's folder with it as upstream's
daemon stages it (a Go module, a crate); functional = `scripts/test.sh`; intent = the
hidden-test diff (`files.future_test`) applied to a copy of the tree in the case's own folder,
then `test.sh` there. The diff is applied as data: git runs with no repository, configuration,
attribute, hook or filter from the tree, and never in the agent's tree. The image's `ENV` is the
task's `default_env`, and the toolchain caches it names are readable by the cases.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ssebench.core.errors import ConfigError
from ssebench.core.tomltext import toml_array, toml_string, toml_value
from ssebench.evaluate.importers.common import (
    BUILD_ENV,
    IMAGE_COMPONENT,
    OWN_NAMES,
    Imported,
    Records,
    Request,
    SourceError,
    image_path,
    plain_name,
    provenance,
)
from ssebench.evaluate.importers.dockerfile import image_env, image_made
from ssebench.evaluate.importers.protection import protected_globs, protected_lines
from ssebench.evaluate.importers.upstreamfolder import (
    Config,
    TaskFolder,
    read_config,
    task_folders,
)

REGISTRY = "ghcr.io/42-b3yond-6ug/ssebench"
TAG = "pilot-v1"  # the pilot dataset's version, upstream's default tag
# The variables that name a language's toolchain caches, which its cases must read.
CACHES = {"go": ("GOPATH", "GOMODCACHE"), "rust": ("CARGO_HOME", "RUSTUP_HOME")}
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
ENV_COMMENT = """\
# The image's environment (its Dockerfile's ENV): a case gets ssebench's own value of each
# name where it has one (a host run's), else the image's."""
CACHE_COMMENT = "# The toolchain caches that environment names: cases read them where they are."


def read(request: Request) -> Records:
    """Every task SOURCE holds (a task folder, an image's /ssebench folder, a dataset folder, a
    checkout), one at a time; `--source` and `--image` name one task's tree and image."""
    given = request.path
    if not given.is_dir():
        raise ConfigError(f"{given}: no such folder (an upstream task folder, or /ssebench)")
    source = request.source
    if source is not None and not source.is_dir():
        raise ConfigError(f"--source {source}: no such folder")
    here = source.resolve() if source is not None else None
    folders = task_folders(given)  # none: not upstream's at all, one line and 2 either way
    if folders != [given] and (here is not None or request.image is not None):
        flag = "--source" if here is not None else "--image"
        raise ConfigError(f"{given}: {flag} is one task's: import a dataset without it")

    def each() -> Iterator[Imported | SourceError]:
        for folder in folders:
            try:
                yield import_task(folder, source=here, image=request.image)
            except SourceError as exc:
                yield exc

    return Records(each(), total=len(folders))


def import_task(given: Path, *, source: Path | None, image: str | None) -> Imported:
    folder = TaskFolder(given)
    config, raw = read_config(folder)
    where = str(folder.config)
    if folder.task_folder and config.id != given.resolve().name:
        raise SourceError(where, "id", f"{config.id} is not the folder's name ({given.name})")
    in_image = image_path(config.source, where, "source")
    task = Imported(config.id, "")
    task.add("upstream/config.yaml", raw)
    if folder.dockerfile is not None:
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
        *_environment(folder, config),
        protected_lines(protected_globs(source, fix)).rstrip("\n"),
    ]
    task.toml = "\n".join(lines) + "\n" + "".join(checks)
    task.warnings += [f"{task.id}: {note}" for note in _notes(folder, task, scripts)]
    return task


def _environment(folder: TaskFolder, config: Config) -> list[str]:
    """The image's ENV as defaults, its build variables, and the caches they name."""
    caches = CACHES.get(config.language, ())
    defaults = image_env(folder.dockerfile or "")
    lines = [f"{ENV_COMMENT}\ndefault_env = {toml_value(defaults)}"] if defaults else []
    lines += [
        "# The image's build variables (a case's environment is an allow-list).",
        toml_array([*BUILD_ENV, *(name for name in caches if name not in BUILD_ENV)], "pass_env"),
    ]
    if caches:
        lines += [CACHE_COMMENT, toml_array([f"${name}" for name in caches], "readable")]
    return lines


def _notes(folder: TaskFolder, task: Imported, scripts: dict[str, str]) -> list[str]:
    """What the task folder cannot carry: what only the image has of /ssebench."""
    notes = []
    if made := image_made(folder.dockerfile or ""):
        shown = made[0] if len(made[0]) <= 90 else made[0][:87] + "..."
        notes.append(
            f"its image makes more of /ssebench than sse/ holds ({shown}): run the task in its "
            "image, or import the image's /ssebench folder"
        )
    for script in scripts.values():
        if b"/ssebench/" in task.files[script][0]:
            notes.append(
                f"{script} names /ssebench/, the image's folder, which no case reads (the task "
                "has it as $SSE_TASK_DIR): make the script name $SSE_TASK_DIR there"
            )
    return notes


def _scripts(config: Config) -> list[tuple[str, str]]:
    named = [("build", config.scripts.build), ("run", config.scripts.run)]
    return [(key, path) for key, path in [*named, ("test", config.scripts.test)] if path]


def _checks(
    folder: TaskFolder, config: Config, task: Imported, copied: dict[str, str]
) -> list[str]:
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
    pocs, granted = _pocs(folder, config, task)
    if pocs:
        if "run" not in copied:
            raise SourceError(config_file, "files.poc", "PoCs need scripts.run")
        cases = [f"{_run(copied['run'])} {_run(path)}" for path in pocs]
        tables.append(
            "\n# Judged as upstream judges them, by run.sh's exit status (0: no longer triggers),\n"
            "# and by a sanitizer's report, which reaches the log whatever run.sh reads.\n"
            f"[checks.pocs]\n{toml_array(granted, 'files')}\n"
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


def _pocs(folder: TaskFolder, config: Config, task: Imported) -> tuple[list[str], list[str]]:
    """The PoCs (their paths in the task folder) and the PoC check's files: as upstream's daemon
    stages a PoC, it comes with the rest of its top-level folder (a Go module's go.mod, a
    crate's Cargo.toml: run.sh copies the folder) unless that folder holds another hidden file
    (the fix, the hidden tests), which no PoC case may read: then the PoC alone."""
    files = config.files
    hidden = [files.patch, files.future_test, files.security_test, files.intent_test]
    tops_hidden = {_top(path) for path in hidden if path}
    pocs: list[str] = []
    granted: list[str] = []
    for index, path in enumerate(files.poc or []):
        key = f"files.poc.{index}"
        name = _add(folder, task, path, key)
        top = _top(path)
        if top is None or top in tops_hidden:
            granted.append(name)
        elif top not in granted:
            granted.append(_name(folder, top, key))
            for inner, data, executable in folder.folder_files(top, key):
                task.add(_name(folder, inner, key), data, script=executable)
        pocs.append(name)
    return pocs, granted


def _top(path: str) -> str | None:
    """The top-level folder of a config path; None for a file at the top."""
    parts = PurePosixPath(os.path.normpath(path)).parts
    return parts[0] if len(parts) > 1 else None


def _add(folder: TaskFolder, task: Imported, path: str, key: str, *, script: bool = False) -> str:
    """Copy a file the config names to the same path in the task folder."""
    name = _name(folder, path, key)
    task.add(name, folder.file(path, key), script=script)
    return name


def _name(folder: TaskFolder, path: str, key: str) -> str:
    """The path a config path has in the task folder, where nothing of ours lies (one that
    leaves the folder is refused as it is read)."""
    name = os.path.normpath(path)
    if name in (*OWN_NAMES, "upstream", ".") or name.startswith("upstream/"):
        why = f"{path}: the imported task keeps a file of its own there"
        raise SourceError(str(folder.config), key, why)
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
