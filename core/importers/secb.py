"""`import secb`: SEC-bench instances (one JSON object, a list, or JSON lines) as task folders,
graded in each instance's evaluation image as SEC-bench grades a patch.

The image is `hwiwonlee/secb.eval.x86_64.<instance_id>:patch` (the reference fix taken out, the
PoC under /testcase); its tree is `work_dir`. build = `secb build` (OSS-Fuzz's `compile`: it
reads the build script and what the image fetched under /src, and writes /out and /work); the
PoC = `secb repro` within 10 s, judged by SEC-bench's default ("medium") rule: it still
triggers unless the run prints no sanitizer report and exits with the instance's `exit_code`.
SEC-bench runs no functional tests; the instance's `patch` is the task's fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, StrictInt, StrictStr

from ssebench.core.importers.common import (
    BUILD_ENV,
    IMAGE_COMPONENT,
    Imported,
    Strict,
    image_path,
    json_records,
    metadata_json,
    once,
    plain_name,
    provenance,
    validated,
)
from ssebench.core.tomltext import toml_array, toml_string

IMAGE = "hwiwonlee/secb.eval.x86_64.{id}:patch"
# SEC-bench's sanitizer report: ==PID==ERROR: AddressSanitizer: ... (or a WARNING).
REPORT = r"==\d+==(ERROR|WARNING): \w+Sanitizer:"
REPRO_SECONDS = 10


class Instance(Strict):
    instance_id: StrictStr
    repo: StrictStr
    project_name: StrictStr
    lang: StrictStr
    work_dir: StrictStr
    sanitizer: StrictStr
    bug_description: StrictStr
    base_commit: StrictStr
    build_sh: StrictStr
    secb_sh: StrictStr
    dockerfile: StrictStr
    patch: Annotated[StrictStr, Field(min_length=1)]
    exit_code: Annotated[StrictInt, Field(ge=0, le=255)]
    sanitizer_report: StrictStr
    bug_report: StrictStr


def import_secb(path: Path) -> list[Imported]:
    tasks: list[Imported] = []
    ids: dict[str, str] = {}
    for where, record in json_records(path):
        instance: Instance = validated(Instance, record, where)
        task = _task(instance, where, record)
        once(ids, task.id, where, "instance_id")
        tasks.append(task)
    return tasks


def _task(instance: Instance, where: str, record: Any) -> Imported:
    ident = plain_name(instance.instance_id, where, "instance_id", IMAGE_COMPONENT)
    source = image_path(instance.work_dir, where, "work_dir")
    head = provenance("secb", where, f"SEC-bench instance {ident}", "secb.json")
    toml = f"""\
{head}source = {toml_string(source)}
image = {toml_string(IMAGE.format(id=ident))}
# OSS-Fuzz's compile reads the build script and what the image fetched under /src, and writes
# /out and /work.
readable = ["/src"]
writable = ["/out", "/work"]
# The image's build variables (a case's environment is an allow-list).
{toml_array(list(BUILD_ENV), "pass_env")}

[checks.build]
run = "secb build"

# SEC-bench's rule: fixed when the run prints no sanitizer report and exits with the
# instance's exit_code ({instance.exit_code}), within {REPRO_SECONDS} s.
[checks.pocs]
files = ["/testcase"]
run = "secb repro"
timeout = {REPRO_SECONDS}

[checks.pocs.triggered_if]
sanitizer = false
output_regex = {toml_string(REPORT)}
passing_exit_codes = [{instance.exit_code}]
"""
    task = Imported(ident, toml)
    task.add("secb.json", metadata_json(record))
    task.add("fix.patch", instance.patch.encode())
    return task
