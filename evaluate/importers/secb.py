"""`import secb`: SEC-bench instances (one JSON object, a list, or JSON lines) as task folders,
graded in each instance's evaluation image as SEC-bench's evaluator grades a patch.

The image is `hwiwonlee/secb.eval.x86_64.<instance_id>:patch` (the reference fix taken out, the
PoC under /testcase); its tree is `work_dir`. build = `secb build` (OSS-Fuzz's `compile`: it
reads the build script and what the image fetched under /src, and writes /out and /work); the
PoC = `secb repro` within 10 s (SEC-bench's `timeout 10 secb repro`), judged in the mode asked
for, as secb/evaluator/eval_instances.py judges: the run prints no sanitizer report (its six
patterns in secb/evaluator/utils.py, and the start of a report), does not time out (an exit of
124 or 137 is SEC-bench's time-out), and exits with 0 (strict), 0 or the instance's
`exit_code` (medium, its default) or anything (generous). SEC-bench runs no functional tests;
the instance's `patch` is the task's fix.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictInt, StrictStr

from ssebench.core.errors import ConfigError
from ssebench.core.tomltext import toml_string
from ssebench.evaluate.importers import SECB_MODES
from ssebench.evaluate.importers.common import (
    IMAGE_COMPONENT,
    Imported,
    Records,
    Request,
    Strict,
    image_path,
    metadata_json,
    plain_name,
    provenance,
)
from ssebench.evaluate.importers.ossfuzz import PocRun, oss_fuzz_toml
from ssebench.evaluate.importers.records import Raw, file_records, tasks

IMAGE = "hwiwonlee/secb.eval.x86_64.{id}:patch"
# The start of a report (SANITIZER_START_PATTERN): SEC-bench reads one from it to its end or
# its stack; its six patterns are among ssebench's own (`sanitizer = true`).
REPORT_START = r"==\d+==(ERROR|WARNING): \w+Sanitizer:"
TIMEOUT_EXIT_CODES = (124, 137)  # `timeout`'s own, and a run killed by SIGKILL
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


def read(request: Request) -> Records:
    """The instances of one file, each judged in the mode asked for (medium by default)."""
    mode = request.mode or SECB_MODES[0]
    if not request.path.is_file():
        raise ConfigError(f"{request.path}: no such file")
    raws = file_records(request.path)

    def make(instance: Instance, raw: Raw) -> Imported:
        return _task(instance, raw, mode)

    return Records(tasks(raws, Instance, "instance_id", make), total=len(raws))


def passing(mode: str, exit_code: int) -> list[int] | None:
    """The statuses a run without a report passes with in `mode` (None: any)."""
    return {"strict": [0], "medium": sorted({0, exit_code}), "generous": None}[mode]


def judging(mode: str, exit_code: int) -> tuple[str, str]:
    """The PoC's rule in `mode`: the comment that says it, and its `triggered_if` lines."""
    statuses = passing(mode, exit_code)
    exits = {
        "strict": "0",
        "medium": f"0 or the instance's exit_code ({exit_code})",
        "generous": "any status, a signal's too",
    }
    why = (
        f"# SEC-bench's {mode} mode (import secb --mode): the PoC no longer triggers when\n"
        "# `secb repro` prints no sanitizer report, does not time out and exits with\n"
        f"# {exits[mode]}."
    )
    rule = [
        "sanitizer = true  # SEC-bench's six patterns among ssebench's (docs/tasks.md)",
        "signal = false  # a signal is its status, 128+N, as SEC-bench reads it",
        "timeout = true",
        f"exit_codes = [{', '.join(map(str, TIMEOUT_EXIT_CODES))}]  # SEC-bench's time-out",
        f"output_regex = {toml_string(REPORT_START)}  # a report's start",
    ]
    if statuses is not None:
        rule.append(f"passing_exit_codes = [{', '.join(map(str, statuses))}]")
    return why, "\n".join(rule) + "\n"


def _task(instance: Instance, raw: Raw, mode: str) -> Imported:
    where = raw.where
    ident = plain_name(instance.instance_id, where, "instance_id", IMAGE_COMPONENT)
    source = image_path(instance.work_dir, where, "work_dir")
    head = provenance("secb", where, f"SEC-bench instance {ident}", "secb.json")
    why, rule = judging(mode, instance.exit_code)
    poc = PocRun("/testcase", "secb repro", REPRO_SECONDS, why, rule)
    fix = instance.patch.encode()
    toml = oss_fuzz_toml(head, (source, IMAGE.format(id=ident)), "secb build", poc, fix)
    task = Imported(ident, toml)
    task.add("secb.json", metadata_json(raw.data))
    task.add("fix.patch", fix)
    return task
