"""A withheld file outside the task folder, where the deployment's lock does not reach: as an
imported ARVO task's PoC is /tmp/poc, readable by every user in its image. Here it is
/tmp/ssebench-poc-<unique> (or in a folder of /var, which no case reads but by the grant),
root's, 0644, of a size no other file has, holding a unique marker; the task folder is locked
to root and the tree is the agent's (uid 1000).

`probe.py` looks for it every way a build (or the agent's own shell) could without reading
it: `stat`, a listing of its folder (`ls -l /tmp`), a walk of it (`find /tmp`), and the /proc
routes (every process's open files, working folder, root, mapped files, mounts, maps,
environment, command line). It prints how many of each route's answers name the file: all 0
where it is out of sight.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

AGENT_UID = 1000
SIZE = 4321
PROBE = """import glob, os, sys
name = open(sys.argv[1] if len(sys.argv) > 1 else "name.txt").read().strip()
base = os.path.basename(name)
def named(texts): return sum(base in text for text in texts)
try:
    info = os.stat(name)
    print(f"stat: {info.st_size} bytes, uid {info.st_uid}")
except OSError as exc:
    print(f"stat: {exc.strerror}")
folder = os.path.dirname(name)
try:
    print("ls -l:", named(os.listdir(folder)))
except OSError:
    print("ls -l: 0")  # a folder it may not read: nothing there either
walked = []
for here, folders, files in os.walk(folder):
    walked += [os.path.join(here, entry) for entry in folders + files]
    if here.count("/") > folder.count("/"):
        folders.clear()
print("find:", named(walked))
seen = []
for route in ("fd/*", "cwd", "root", "map_files/*"):
    for path in glob.glob(f"/proc/[0-9]*/{route}"):
        try:
            seen.append(os.readlink(path))
        except OSError:
            pass
for route in ("mountinfo", "maps", "environ", "cmdline"):
    for path in glob.glob(f"/proc/[0-9]*/{route}"):
        try:
            with open(path, "rb") as file:
                seen.append(file.read().decode("latin-1"))
        except OSError:
            pass
print("/proc:", sum(name in text for text in seen))
"""
NOTHING = "stat: No such file or directory\nls -l: 0\nfind: 0\n/proc: 0\n"
SEEN = f"stat: {SIZE} bytes, uid 0\nls -l: 1\nfind: 1\n"


@dataclass
class Outside:
    """The file, its marker, and the task that withholds it from all but its PoC check."""

    path: Path
    marker: str
    task: Path
    folder: Path | None = None  # made for it (under /var), removed with it

    @property
    def content(self) -> bytes:
        return f"{self.marker}\n".encode().ljust(SIZE, b"#")

    def state(self) -> tuple[object, ...]:
        """All the file is (read without touching its access time); None when it is gone."""
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            return (None,)
        with open(os.open(self.path, os.O_RDONLY | os.O_NOATIME), "rb") as file:
            content = file.read()
        return (content, info.st_ino, info.st_mode, info.st_uid, info.st_gid,
                info.st_mtime_ns, info.st_atime_ns)  # fmt: skip

    def remove(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
        elif self.path.is_dir() and not self.path.is_symlink():
            shutil.rmtree(self.path)
        else:
            self.path.unlink(missing_ok=True)


def make_outside(
    root: Path, build: str = "python3 probe.py && test -e PASS", where: str = "/tmp"
) -> Outside:
    """The file in /tmp (or in a folder of its own in `where`), and a task in `root` whose PoC
    check alone may read it; its build runs the probe (and fails until a patch adds PASS, so
    its log shows at level 2); its own command line never names the file (the probe reads
    /proc)."""
    tag = uuid.uuid4().hex[:12]
    folder = None if where == "/tmp" else Path(where) / f"ssebench-test-{tag}"
    if folder is not None:
        folder.mkdir(mode=0o755)
    path = (folder or Path(where)) / f"ssebench-poc-{tag}"
    outside = Outside(path, f"MARKOUTSIDE{tag}", root, folder)
    outside.path.write_bytes(outside.content)
    outside.path.chmod(0o644)
    # Its access time ahead of its change time: a read by another test on this machine (the
    # attack suite reads /tmp/*) leaves it as it is (relatime), so any change is ours.
    ahead = time.time_ns() + 3_600_123_456_789
    os.utime(outside.path, ns=(ahead, 1_600_000_000_987_654_321))
    source = root / "src"
    source.mkdir(parents=True)
    (source / "probe.py").write_text(PROBE)
    (source / "name.txt").write_text(f"{outside.path}\n")
    # The PoC case opens it on fd 3 first: the probe then finds it by /proc too.
    poc = f"exec 3<{outside.path}; python3 probe.py; cat {outside.path}"
    (root / "task.toml").write_text(
        f'source = "src"\n[checks.build]\nrun = "{build}"\n'
        f'[checks.pocs]\nfiles = ["{outside.path}"]\ncases = ["{poc}"]\n'
    )
    if os.geteuid() == 0:
        for path in (source, source / "probe.py", source / "name.txt"):
            os.chown(path, AGENT_UID, AGENT_UID)
        root.chmod(0o700)
    return outside
