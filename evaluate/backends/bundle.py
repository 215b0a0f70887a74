"""ssebench brought into a task's image: the installed ssebench, copied once into a cache.

A task's image needs python3 3.11 or newer, not ssebench. Every grading container gets, read-only,
a copy of the distributions this ssebench runs with: its own, its dependencies', every installed
check plugin's (entry points are how checks are found, so their metadata comes too). Why a copy of
the installed files and not a wheelhouse: it needs no index and no build step (these machines
reach no registry), and a container grades with exactly the code and checks a local grade uses.
The copy is made once and named by what it holds (each distribution's RECORD, and for an
editable install every source file's path, size and time), so an upgrade or an edited checkout
makes a new one, and a container never sees a copy half made.

Pure-Python files serve any python3; compiled modules only a Python of the same EXT_SUFFIX, so
the distributions that have them are kept apart, under `abi/<EXT_SUFFIX>` (see abi.py for
another Python's).
"""

from __future__ import annotations

import ast
import compileall
import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

UNUSED_SECONDS = 86400.0
FORMAT = "3"  # bumped when the layout changes, so an old cache is never taken for a new one
COMPILED = "compiled.json"  # [[name, version], ...] of the distributions with compiled modules
_PLUGINS = "ssebench.checks"
_SKIP = re.compile(r"(^|/)(__pycache__|__editable__[^/]*)(/|$)|\.pyc$")


@dataclass(frozen=True)
class Bundle:
    root: Path  # the cache folder named by its contents
    compiled: tuple[tuple[str, str], ...]  # (name, version) of each with compiled modules

    @property
    def site(self) -> Path:
        """The pure-Python part, for any Python."""
        return self.root / "site"

    def abi(self, ext_suffix: str) -> Path:
        """The compiled part for a Python whose EXT_SUFFIX is `ext_suffix`."""
        return self.root / "abi" / ext_suffix.strip(".")


def cache_dir() -> Path:
    """ssebench's cache: $XDG_CACHE_HOME/ssebench, else ~/.cache/ssebench."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base).absolute() / "ssebench"


def host_suffix() -> str:
    """This Python's EXT_SUFFIX: which compiled modules it loads."""
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions() -> list[metadata.Distribution]:
    """ssebench, every installed check plugin, and what they require (extras aside).

    Only installed distributions (a dist-info with a RECORD) count, and never the current
    folder's: a checkout's `*.egg-info` would otherwise stand in for the installed ssebench.
    """
    here = {"", os.getcwd()}
    path = [entry for entry in sys.path if entry not in here]
    found = {
        _key(dist.metadata["Name"]): dist
        for dist in reversed(list(metadata.distributions(path=path)))  # the first on path wins
        if dist.read_text("RECORD") is not None
    }
    plugins = {ep.dist.metadata["Name"] for ep in metadata.entry_points(group=_PLUGINS) if ep.dist}
    wanted: list[tuple[str, frozenset[str]]] = [
        (name, frozenset()) for name in ["ssebench", *plugins]
    ]
    seen: set[tuple[str, frozenset[str]]] = set()
    while wanted:
        name, extras = wanted.pop()
        if (_key(name), extras) in seen or _key(name) not in found:
            continue
        seen.add((_key(name), extras))
        for requirement in found[_key(name)].requires or []:
            if _wanted(requirement, extras):
                wanted.append(_named(requirement))
    return [found[name] for name in sorted({name for name, _ in seen})]


def _wanted(requirement: str, extras: frozenset[str]) -> bool:
    """Whether a requirement counts: no extra in its marker, or one of `extras`. Other markers
    (python_version, ...) are not judged: a distribution too many costs a few files."""
    marker = requirement.partition(";")[2]
    named = re.findall(r"""extra\s*==\s*["']([^"']+)["']""", marker)
    return not named or bool(extras & {_key(extra) for extra in named})


def _named(requirement: str) -> tuple[str, frozenset[str]]:
    """`name[extra, ...] >= 1; marker` as (name, its extras)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", requirement)
    assert match is not None, requirement
    extras = frozenset(_key(e) for e in (match[2] or "").split(",") if e.strip())
    return match[1], extras


def _editable_roots(dist: metadata.Distribution, record: Path) -> Iterator[tuple[Path, Path]]:
    """An editable install's packages: setuptools' finder maps each to its folder."""
    try:
        tree = ast.parse(record.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign) and node.value is not None:
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == "MAPPING" for t in targets):
                for package, folder in ast.literal_eval(node.value).items():
                    yield Path(folder), Path(*package.split("."))


def files(dist: metadata.Distribution) -> Iterator[tuple[Path, Path]]:
    """(where the file is, where it goes in the copy) for every file `dist` installed."""
    base = Path(str(dist.locate_file("")))
    for entry in dist.files or []:
        relative = entry.as_posix()
        source = base / relative
        if relative.startswith("__editable__") and relative.endswith("_finder.py"):
            for folder, target in _editable_roots(dist, source):
                for found in sorted(folder.rglob("*")):
                    inside = found.relative_to(folder)
                    if found.is_file() and not _SKIP.search(inside.as_posix()):
                        yield found, target / inside
        elif not (relative.startswith("..") or _SKIP.search(relative)) and source.is_file():
            yield source, Path(relative)


def _compiled(listed: list[tuple[Path, Path]]) -> bool:
    return any(target.name.endswith(host_suffix()) for _, target in listed)


def _fingerprint(dist: metadata.Distribution) -> str:
    """What names a distribution's files: its RECORD (rewritten by every install), and for an
    editable install each source file's path, size and time. Cheap: no installed file is read."""
    record = dist.read_text("RECORD") or ""
    parts = [dist.metadata["Name"], dist.version, hashlib.sha256(record.encode()).hexdigest()]
    base = Path(str(dist.locate_file("")))
    for line in record.splitlines():
        entry = line.split(",", 1)[0]
        if entry.startswith("__editable__") and entry.endswith("_finder.py"):
            for folder, _ in _editable_roots(dist, base / entry):
                for found in sorted(folder.rglob("*")):
                    info = found.stat()
                    parts.append(f"{found}\0{info.st_size}\0{info.st_mtime_ns}")
    return "\0".join(parts)


def ensure_bundle(cache: Path | None = None) -> Bundle:
    """The copy of this ssebench in `cache` (default cache_dir()), made now if it is not there."""
    dists = distributions()
    ext_suffix = host_suffix()
    digest = hashlib.sha256(f"{FORMAT}\0{ext_suffix}\0".encode())
    for dist in dists:
        digest.update(_fingerprint(dist).encode() + b"\0")
    root = (cache or cache_dir()) / "bundles" / digest.hexdigest()[:24]
    if not root.is_dir():
        _build(root, dists, ext_suffix)
        prune_unused(root.parent)
    with contextlib.suppress(OSError):
        os.utime(root)  # in use: see prune_unused
    compiled = json.loads((root / COMPILED).read_text(encoding="utf-8"))
    return Bundle(root, tuple((name, version) for name, version in compiled))


def prune_unused(bundles: Path) -> None:
    """Copies unused for a day go (their folder's time is when one was last used): an edited
    checkout makes one per edit. (A grade that still
    runs on one used it when it started, and no grade lasts a day.)"""
    for old in bundles.iterdir():
        with contextlib.suppress(OSError):
            if time.time() - old.stat().st_mtime > UNUSED_SECONDS:
                shutil.rmtree(old)


def _build(root: Path, dists: list[metadata.Distribution], ext_suffix: str) -> None:
    """Copy into a folder of our own, then rename: a reader sees all of it or none."""
    planned: list[tuple[Path, Path]] = []  # (source, target inside the bundle)
    compiled = []
    for dist in dists:
        listed = list(files(dist))
        part = Path("site")
        if _compiled(listed):
            compiled.append((dist.metadata["Name"], dist.version))
            part = Path("abi", ext_suffix.strip("."))
        planned += [(source, part / target) for source, target in listed]
    root.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=root.parent))
    try:
        (partial / COMPILED).write_text(json.dumps(compiled), encoding="utf-8")
        (partial / "abi" / ext_suffix.strip(".")).mkdir(parents=True)  # even with none compiled
        for source, target in planned:
            (partial / target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, partial / target)
        # Compiled now: mounted read-only, the copy could not keep what each start compiles
        # (0.4 s a grade). A Python of another version compiles for itself, as before.
        compileall.compile_dir(partial, quiet=2, workers=0)
        for folder in [partial, *(p for p in partial.rglob("*") if p.is_dir())]:
            folder.chmod(0o755)  # readable by whichever user a container runs a case as
        with contextlib.suppress(OSError):  # another grade made the same copy first: keep it
            os.rename(partial, root)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
