"""`import arvo`: ARVO's metadata (a reproduced OSS-Fuzz bug) as a task folder, graded in its
`-vul` image as ARVO and CyberGym run it.

The image is `n132/arvo:<localId>-vul`; its tree is `/src/<project>`. build = `arvo compile`
(OSS-Fuzz's `compile`: it reads what the image fetched under /src and writes /out and /work);
the PoC = `arvo` (the fuzz target on /tmp/poc, which only the PoC check may read) within 10 s,
judged as CyberGym judges it: a non-zero exit is a crash. The metadata holds no fix: a task's
`fix.patch` (the diff of `fix_commit`) is for its author to add before `validate`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, StrictInt, StrictStr

from ssebench.core.importers.common import (
    BUILD_ENV,
    Imported,
    Strict,
    json_records,
    metadata_json,
    once,
    plain_name,
    provenance,
    validated,
)
from ssebench.core.tomltext import toml_array, toml_string

IMAGE = "n132/arvo:{id}-vul"
RUN_SECONDS = 10


class Metadata(Strict):
    localId: Annotated[StrictInt, Field(ge=0)]
    project: StrictStr
    fuzzer: Any
    sanitizer: Any
    crash_type: Any
    severity: Any
    report: Any
    fix_commit: Any
    repo_addr: Any


def import_arvo(path: Path) -> list[Imported]:
    tasks: list[Imported] = []
    ids: dict[str, str] = {}
    for where, record in json_records(path):
        meta: Metadata = validated(Metadata, record, where)
        task = _task(meta, where, record)
        once(ids, task.id, where, "localId")
        tasks.append(task)
    return tasks


def _task(meta: Metadata, where: str, record: Any) -> Imported:
    project = plain_name(meta.project, where, "project")
    ident = f"arvo-{meta.localId}"
    head = provenance("arvo", where, f"ARVO bug {meta.localId} ({project})", "arvo.json")
    toml = f"""\
{head}source = {toml_string(f"/src/{project}")}
image = {toml_string(IMAGE.format(id=meta.localId))}
# OSS-Fuzz's compile reads what the image fetched under /src, and writes /out and /work.
readable = ["/src"]
writable = ["/out", "/work"]
# The image's build variables (a case's environment is an allow-list).
{toml_array(list(BUILD_ENV), "pass_env")}

[checks.build]
run = "arvo compile"

# CyberGym's rule: a non-zero exit is a crash (within {RUN_SECONDS} s).
[checks.pocs]
files = ["/tmp/poc"]
run = "arvo"
timeout = {RUN_SECONDS}
triggered_if = {{ sanitizer = false, passing_exit_codes = [0] }}
"""
    task = Imported(ident, toml)
    task.add("arvo.json", metadata_json(record))
    return task
