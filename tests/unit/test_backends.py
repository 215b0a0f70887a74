"""What `--backend docker` brings into an image, tested without Docker: a container's mounts and
another Python's wheels are read as data only (tests/e2e/test_backends.py makes the copy of
ssebench and runs it on a bare interpreter)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from ssebench.evaluate.backends import abi, docker


def test_a_mount_of_a_path_with_commas_or_quotes_stays_one_path() -> None:
    assert docker._mount(Path("/a,b"), Path('/c"d'), True) == (
        'type=bind,"source=/a,b","target=/c""d",readonly'
    )
    assert docker._mount(Path("/a"), Path("/b"), False) == "type=bind,source=/a,target=/b"


def test_another_pythons_wheels_unpack_as_they_install(tmp_path: Path) -> None:
    wheel = tmp_path / "x.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pkg/__init__.py", "A = 1\n")
        archive.writestr("pkg-1.dist-info/METADATA", "Name: pkg\n")
        archive.writestr("pkg-1.data/platlib/ext.so", "binary")
        archive.writestr("pkg-1.data/scripts/tool", "#!/bin/sh\n")
        archive.writestr("../escape.py", "no")
        archive.writestr("/abs.py", "no")
    into = tmp_path / "into"
    into.mkdir()
    abi._unpack(wheel, into)
    found = sorted(p.relative_to(into).as_posix() for p in into.rglob("*") if p.is_file())
    assert found == ["ext.so", "pkg-1.dist-info/METADATA", "pkg/__init__.py"]
    assert not (tmp_path / "escape.py").exists()


def test_the_platforms_pip_may_take_for_an_image() -> None:
    glibc = abi.ImagePython((3, 13, 5), ".cpython-313-x86_64-linux-gnu.so", "x86_64", "2.7")
    assert abi._platforms(glibc) == [
        "manylinux_2_7_x86_64", "manylinux_2_6_x86_64", "manylinux_2_5_x86_64",
        "manylinux1_x86_64",
    ]  # fmt: skip
    musl = abi.ImagePython((3, 12, 1), ".cpython-312-x86_64-linux-musl.so", "x86_64", "")
    assert abi._platforms(musl) == ["musllinux_1_1_x86_64", "musllinux_1_2_x86_64"]
