"""Which Python a task's image has, and ssebench's compiled part for it.

An image is asked once (by its ID, so a rebuilt image is asked again) for its python3's version
and EXT_SUFFIX, and the answer is kept in the cache. An image whose Python is this one's kind
(the same EXT_SUFFIX) uses the compiled modules installed here. Another (Python 3.12 or 3.13,
say) needs them built for it: pip fetches those wheels once, for exactly the installed versions,
and they are kept in the cache beside the copy they complete. That takes a package index; where
none is reachable it is one line saying which Python the image should have instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ssebench.core.errors import ConfigError
from ssebench.evaluate.backends.bundle import Bundle, host_suffix

MINIMUM = (3, 11)
FETCH_SECONDS = 600.0
# Runs on any python3, however old, so that it can say which version it is.
_PROBE = (
    "import json, platform, sys, sysconfig; print(json.dumps({'version': list(sys.version_info"
    "[:3]), 'ext_suffix': sysconfig.get_config_var('EXT_SUFFIX') or '.so', "
    "'machine': platform.machine(), 'glibc': platform.libc_ver()[1]}))"
)


@dataclass(frozen=True)
class ImagePython:
    version: tuple[int, ...]
    ext_suffix: str
    machine: str
    glibc: str  # "2.36"; empty where the C library is not glibc (musl)

    @property
    def shown(self) -> str:
        return ".".join(map(str, self.version))


def image_python(docker: str, image: str, ident: str, cache: Path) -> ImagePython:
    """The image's python3, asked once per image; one line when it has none fit to run ssebench."""
    path = cache / "images" / f"{ident.removeprefix('sha256:')}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = _probe(docker, image, ident)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".probe-", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(data, file)
        os.replace(temp, path)
    python = ImagePython(
        tuple(data["version"]), data["ext_suffix"], data["machine"], data.get("glibc", "")
    )
    if python.version[:2] < MINIMUM:
        raise ConfigError(
            f"--backend docker: the python3 of {image} is {python.shown}; grading in an image "
            "needs python3 3.11 or newer there"
        )
    return python


def _probe(docker: str, image: str, ident: str) -> dict[str, object]:
    argv = [docker, "run", "--rm", "--network", "none", "--pull", "never", "--user", "0:0"]
    argv += ["--entrypoint", "python3", ident, "-I", "-c", _PROBE]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=FETCH_SECONDS)
    if done.returncode != 0:
        why = last_line(done.stderr) or f"exit status {done.returncode}"
        if done.returncode == 127:
            why = "no python3 on its PATH"
        raise ConfigError(
            f"--backend docker: {image} cannot run ssebench ({why}); it needs python3 3.11 or newer"
        )
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def compiled_part(bundle: Bundle, python: ImagePython, image: str) -> Path:
    """The folder of compiled modules for the image's Python: ours, or fetched once."""
    target = bundle.abi(python.ext_suffix)
    if target.is_dir():
        return target
    host = host_suffix()
    if python.machine != os.uname().machine:
        raise ConfigError(
            f"--backend docker: {image} is for {python.machine}; ssebench here runs on "
            f"{os.uname().machine}"
        )
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=target.parent) as work:
        for name, version in bundle.compiled:
            _download(name, version, python, Path(work, "wheels"), image, host)
        partial = Path(work, "abi")
        partial.mkdir()
        for wheel in sorted(Path(work, "wheels").glob("*.whl")):
            _unpack(wheel, partial)
        with contextlib.suppress(OSError):  # another grade fetched the same first: keep it
            os.rename(partial, target)
    return target


def last_line(text: str) -> str:
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")


def _platforms(python: ImagePython) -> list[str]:
    arch = python.machine
    if not python.glibc:
        return [f"musllinux_1_{minor}_{arch}" for minor in (1, 2)]
    newest = int(python.glibc.split(".")[1])
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}  # PEP 600's aliases
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(newest, 4, -1)]
    return tags + [f"{name}_{arch}" for minor, name in legacy.items() if minor <= newest]


def _download(
    name: str, version: str, python: ImagePython, wheels: Path, image: str, host: str
) -> None:
    tag = f"{python.version[0]}{python.version[1]}"
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    argv += ["--no-deps", "--only-binary=:all:", "--dest", str(wheels)]
    argv += ["--python-version", tag, "--implementation", "cp", "--abi", f"cp{tag}"]
    argv += [arg for platform in _platforms(python) for arg in ("--platform", platform)]
    done = subprocess.run(
        [*argv, f"{name}=={version}"], capture_output=True, text=True, timeout=FETCH_SECONDS
    )
    if done.returncode != 0:
        why = last_line(done.stderr) or f"exit status {done.returncode}"
        raise ConfigError(
            f"--backend docker: the python3 of {image} is {python.shown}, and ssebench's "
            f"{name} {version} is built for this machine's ({host.strip('.')}); pip could not "
            f"fetch one for it ({why.removeprefix('ERROR: ')}): use an image with this "
            "machine's Python, or a package index"
        )


def _unpack(wheel: Path, into: Path) -> None:
    """A wheel's files as they install: `*.data/purelib` and `platlib` at the top too."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            parts = PurePosixPath(member.filename).parts
            if member.is_dir() or ".." in parts or member.filename.startswith("/"):
                continue
            if parts[0].endswith(".data"):
                if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                    continue  # scripts and headers: nothing a grade runs
                parts = parts[2:]
            target = into.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, target.open("wb") as sink:
                shutil.copyfileobj(source, sink)
    for folder in [into, *(p for p in into.rglob("*") if p.is_dir())]:
        folder.chmod(0o755)
