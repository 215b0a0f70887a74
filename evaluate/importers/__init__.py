"""Other benchmarks' task formats as ssebench task folders: upstream ssebench, SEC-bench, ARVO
(DESIGN.md, "Importing other benchmarks' tasks"; docs/importing.md).

`FORMATS` is the one table of them that `ssebench import` takes its choices, its help and its
readers from. It stays light (no reader is imported until its format is asked for): the command
line reads it only when `import` is given, so no other command pays for it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ssebench.evaluate.importers.common import Reader

# SEC-bench's judging modes (its evaluator's --mode), the first its default.
SECB_MODES = ("medium", "strict", "generous")


@dataclass(frozen=True)
class Format:
    """One benchmark's format: the name `import` takes, the benchmark's, its reader
    ("module:function", loaded when asked), what SOURCE is for it, and the flags of `import`
    that are its own."""

    name: str
    benchmark: str
    reader: str
    source: str
    flags: tuple[str, ...] = ()

    def load(self) -> Reader:
        module, function = self.reader.split(":")
        read: Reader = getattr(importlib.import_module(module), function)
        return read


FORMATS: dict[str, Format] = {
    entry.name: entry
    for entry in (
        Format(
            "upstream",
            "upstream ssebench's tasks",
            "ssebench.evaluate.importers.upstream:read",
            "an upstream task folder (Dockerfile, sse/) or an image's /ssebench folder",
            ("--source", "--image"),
        ),
        Format(
            "secb",
            "SEC-bench's instances",
            "ssebench.evaluate.importers.secb:read",
            "SEC-bench instances: a JSON object, a JSON list of them, or JSON lines",
            ("--mode",),
        ),
        Format(
            "arvo",
            "ARVO's reproduced OSS-Fuzz bugs",
            "ssebench.evaluate.importers.arvo:read",
            "ARVO-Meta: a checkout (meta/, patches/), a meta/ folder, one <localId>.json, or "
            "JSON lines",
        ),
    )
}
