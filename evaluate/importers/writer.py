"""Writing imported tasks into OUT, never a half of one: each is written aside (in a folder of
the import's own inside OUT), loaded back as every command would load it, and moved to
`OUT/<id>` only when the import ends well. A record refused writes nothing; an import that
stops (a bad record without --keep-going, an interrupt, a full disk) leaves nothing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from ssebench.core.errors import ConfigError
from ssebench.evaluate.importers.common import Imported


class Refused(ConfigError):
    """A task this import cannot write (its folder is there already, or ssebench cannot load
    what it made of it): one line, the rest of the import unharmed."""


class TaskWriter:
    """`with TaskWriter(out, load) as writer: writer.add(task) ...; writer.commit()`; `load(path)`
    is how every command loads a task folder."""

    def __init__(self, out: Path, load: Callable[[Path], object]) -> None:
        self.out, self.load = out, load
        self.aside: Path | None = None  # made with the first task: a bad source makes nothing
        self.made: list[Path] = []  # the folders of OUT's path this import made
        self.ready: list[str] = []  # the tasks written aside, in the order they came
        self.taken: set[str] = set()

    def __enter__(self) -> TaskWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with contextlib.suppress(OSError):
            if self.aside is not None:
                shutil.rmtree(self.aside)
            for folder in reversed(self.made):
                folder.rmdir()  # only when empty: nothing was written there

    def _aside(self) -> Path:
        if self.aside is None:
            try:
                missing = [p for p in (self.out, *self.out.parents) if not p.exists()]
                self.out.mkdir(parents=True, exist_ok=True)
                self.made = missing[::-1]
                self.aside = Path(tempfile.mkdtemp(prefix=".ssebench-import-", dir=self.out))
            except OSError as exc:
                raise self._cannot(exc) from None
        return self.aside

    def add(self, task: Imported) -> None:
        """Write `task` aside and load it back; Refused when it cannot be, nothing of it left."""
        if task.id in self.taken:
            raise Refused(f"two records are both task {task.id!r}: each needs a folder")
        if os.path.lexists(self.out / task.id):
            raise Refused(f"{self.out / task.id} exists: import into another --out, or remove it")
        folder = self._aside() / task.id
        try:
            _write(folder, task)
            self.load(folder)
        except ConfigError as exc:
            shutil.rmtree(folder, ignore_errors=True)
            raise Refused(f"{task.id}: ssebench cannot load the task it made: {exc}") from None
        except OSError as exc:
            raise self._cannot(exc) from None
        self.ready.append(task.id)
        self.taken.add(task.id)

    def commit(self) -> list[Path]:
        """Move every task written into place; their folders, in the order they came."""
        written: list[Path] = []
        try:
            for ident in self.ready:
                os.rename(self._aside() / ident, self.out / ident)
                written.append(self.out / ident)
        except OSError as exc:
            raise self._cannot(exc) from None
        return written

    def _cannot(self, exc: OSError) -> ConfigError:
        return ConfigError(f"--out {self.out}: cannot write there: {exc.strerror or exc}")


def _write(folder: Path, task: Imported) -> None:
    folder.mkdir()
    (folder / "task.toml").write_text(task.toml, encoding="utf-8")
    for name, (data, script) in task.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o755 if script else 0o644)
