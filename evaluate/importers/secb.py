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

from ssebench.core.tomltext import toml_string
from ssebench.evaluate.importers.common import (
    IMAGE_COMPONENT,
    Imported,
    PocRun,
    Strict,
    image_path,
    metadata_json,
    oss_fuzz_toml,
    plain_name,
    provenance,
    read_records,
)

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
    return read_records(path, Instance, "instance_id", _task)


def _task(instance: Instance, where: str, record: Any) -> Imported:
    ident = plain_name(instance.instance_id, where, "instance_id", IMAGE_COMPONENT)
    source = image_path(instance.work_dir, where, "work_dir")
    head = provenance("secb", where, f"SEC-bench instance {ident}", "secb.json")
    poc = PocRun(
        "/testcase",
        "secb repro",
        REPRO_SECONDS,
        "# SEC-bench's rule: fixed when the run prints no sanitizer report and exits with the\n"
        f"# instance's exit_code ({instance.exit_code}), within {REPRO_SECONDS} s.",
        f"\n[checks.pocs.triggered_if]\nsanitizer = false\noutput_regex = {toml_string(REPORT)}\n"
        f"passing_exit_codes = [{instance.exit_code}]\n",
    )
    fix = instance.patch.encode()
    toml = oss_fuzz_toml(head, source, IMAGE.format(id=ident), "secb build", poc, fix)
    task = Imported(ident, toml)
    task.add("secb.json", metadata_json(record))
    task.add("fix.patch", fix)
    return task
