"""`import arvo`: ARVO's index of reproduced OSS-Fuzz bugs (n132/ARVO-Meta) as task folders,
graded in each bug's `-vul` image as ARVO and CyberGym run it.

SOURCE is a checkout of ARVO-Meta (`meta/<localId>.json`, `patches/<localId>.diff`), its
`meta/` folder, one `<localId>.json`, or JSON lines; a record's fix is the `git show` of its
fixing commit at `patches/<localId>.diff` beside the folder of the record's file, when there.
The image is `n132/arvo:<localId>-vul`; its tree is `/src/<project>`. build = `arvo compile`
(OSS-Fuzz's `compile`). The PoC is what `arvo` runs, the fuzz target it names on /tmp/poc (only
the PoC check may read it), within CyberGym's 10 s, with the sanitizer options `arvo` exports
as the task's own: `arvo` run as it is would replace ssebench's report channel with them. It
still triggers on a report in the words of the record's sanitizer, a fatal signal, a time-out,
or (CyberGym's rule) any exit but 0.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, StrictInt, StrictStr, field_validator

from ssebench.core.errors import ConfigError
from ssebench.core.tomltext import toml_string
from ssebench.evaluate.importers.common import (
    PLAIN_NAME,
    Imported,
    Records,
    Request,
    SourceError,
    Strict,
    metadata_json,
    provenance,
)
from ssebench.evaluate.importers.ossfuzz import PocRun, oss_fuzz_toml
from ssebench.evaluate.importers.protection import fix_paths
from ssebench.evaluate.importers.records import Raw, file_records, folder_records, tasks

IMAGE = "n132/arvo:{id}-vul"
RUN_SECONDS = 10
# Where the tasks' withheld files lie, outside their folders, where locking a task folder to
# root does not reach: said once on stderr by `ssebench import arvo`.
WITHHELD = (
    "each task's PoC lies at /tmp/poc in its image, readable by every user there unless "
    "`ssebench run` locks it (as root) while the agent runs"
)
# What `arvo` exports before it runs the target (ARVO's arvo/utils_init.py: OSS-Fuzz's
# base-runner's options).
OPTIONS = {
    "ASAN_OPTIONS": "alloc_dealloc_mismatch=0:allocator_may_return_null=1:"
    "allocator_release_to_os_interval_ms=500:check_malloc_usable_size=0:"
    "detect_container_overflow=1:detect_odr_violation=0:detect_leaks=0:"
    "detect_stack_use_after_return=1:fast_unwind_on_fatal=0:handle_abort=1:handle_segv=1:"
    "handle_sigill=1:max_uar_stack_size_log=16:print_scariness=1:quarantine_size_mb=10:"
    "strict_memcmp=1:strip_path_prefix=/workspace/:symbolize=1:use_sigaltstack=1:"
    "dedup_token_length=3",
    "MSAN_OPTIONS": "print_stats=1:strip_path_prefix=/workspace/:symbolize=1:dedup_token_length=3",
    "UBSAN_OPTIONS": "print_stacktrace=1:print_summary=1:silence_unsigned_overflow=1:"
    "strip_path_prefix=/workspace/:symbolize=1:dedup_token_length=3",
}
ENV = (
    "# What `arvo` exports (OSS-Fuzz's options); ssebench adds its report channel to them.\n"
    "[env]\n" + "".join(f"{name} = {toml_string(value)}\n" for name, value in OPTIONS.items())
)
# A report in the words of each sanitizer ARVO's records name (asan's runtime runs LSan too).
WORDS = {
    "asan": ("AddressSanitizer", r"ERROR: (AddressSanitizer|LeakSanitizer):"),
    "msan": ("MemorySanitizer", r"(ERROR|WARNING): MemorySanitizer:"),
    "ubsan": (
        "UndefinedBehaviorSanitizer",
        r"runtime error:|UndefinedBehaviorSanitizer:DEADLYSIGNAL|"
        r"SUMMARY: UndefinedBehaviorSanitizer:",
    ),
}
# `arvo` runs `/out/<target> /tmp/poc`, the one line of /bin/arvo that names /out (ARVO's own
# tools find the target so too).
RUN = (
    'target=$(grep -o -m1 "/out/[^[:space:]]*" /bin/arvo) || { echo "ssebench: /bin/arvo '
    'names no fuzz target" >&2; exit 2; }; exec "$target" /tmp/poc'
)


class Metadata(Strict):
    localId: Annotated[StrictInt, Field(ge=0)]
    project: StrictStr
    fix: StrictStr
    fix_commit: Any  # a commit id, or a list of them (483 of ARVO-Meta's records)
    verify: StrictStr
    fuzzer: StrictStr
    sanitizer: Literal["asan", "msan", "ubsan"]
    crash_type: StrictStr
    repo_addr: StrictStr
    report: dict[StrictStr, Any]
    severity: StrictStr | None = None
    CVE: list[StrictStr] | None = None

    @field_validator("fix_commit")
    @classmethod
    def _commits(cls, value: Any) -> Any:
        listed = isinstance(value, list) and value and all(isinstance(c, str) for c in value)
        if not (isinstance(value, str) or listed):
            raise ValueError(f"must be a commit id or a list of them (got {value!r})")
        return value


def read(request: Request) -> Records:
    """The records of a checkout (its meta/), a meta/ folder (its files in localId order), or
    one file; SOURCE not there, or a folder of no records, is one line."""
    path = request.path
    if path.is_file():
        raws = file_records(path)
        return Records(tasks(raws, Metadata, "localId", _task), len(raws), (WITHHELD,))
    if not path.is_dir():
        raise ConfigError(f"{path}: no such file or folder")
    meta = path / "meta" if (path / "meta").is_dir() else path
    files = sorted(meta.glob("*.json"), key=_by_number)
    if not files:
        raise ConfigError(
            f"{path}: neither a checkout of ARVO-Meta (meta/, patches/) nor a folder of "
            "<localId>.json files"
        )
    items = tasks(folder_records(files), Metadata, "localId", _task)
    return Records(items, len(files), (WITHHELD,))


def _by_number(path: Path) -> tuple[int, str]:
    return (int(path.stem), "") if path.stem.isdigit() else (-1, path.name)


def _task(meta: Metadata, raw: Raw) -> Imported:
    project = _project(meta.project, raw.where)
    task = Imported(f"arvo-{meta.localId}", "")
    fix = _fix(raw.path.parent.parent / "patches" / f"{meta.localId}.diff", task)
    head = provenance("arvo", raw.where, f"ARVO bug {meta.localId} ({project})", "arvo.json")
    why, rule = judging(meta.sanitizer)
    poc = PocRun("/tmp/poc", RUN, RUN_SECONDS, why, rule)
    image = IMAGE.format(id=meta.localId)
    tree = f"/src/{project.rsplit('/', 1)[-1]}"
    task.toml = oss_fuzz_toml(head, (tree, image), "arvo compile", poc, fix, ENV)
    task.add("arvo.json", metadata_json(raw.data))
    if fix is not None:
        task.add("fix.patch", fix)
    return task


def judging(sanitizer: str) -> tuple[str, str]:
    """The PoC's rule for a bug ARVO found with `sanitizer`: the comment that says it, and its
    `triggered_if` lines."""
    name, words = WORDS[sanitizer]
    why = (
        "`arvo` exports the options above (in place of ssebench's report channel) and runs "
        "the fuzz target that /bin/arvo names on /tmp/poc; this runs that target with those "
        f"options and the channel kept, within CyberGym's {RUN_SECONDS}\0s. ARVO found the bug "
        f"with {sanitizer}: the PoC still triggers on {name}'s report, a fatal signal, a "
        "time-out, or any exit but 0 (CyberGym's rule: a non-zero exit is a crash)."
    )
    rule = (
        f"sanitizer = false  # {name}'s words alone (output_regex)\nsignal = true\n"
        f"timeout = true\noutput_regex = {toml_string(words)}\npassing_exit_codes = [0]\n"
    )
    comment = textwrap.fill(
        why, 99, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False
    )
    return comment.replace("\0", " "), rule  # never "10" at a line's end and "s" below


def _project(value: str, where: str) -> str:
    """OSS-Fuzz's project name, or a repository of a project's (`qt/qtqa`): its tree is
    /src/<the last name>."""
    for name in value.split("/"):
        if not PLAIN_NAME.fullmatch(name) or ".." in name:
            raise SourceError(where, "project", f"not a plain name (got {value!r})")
    return value


def _fix(path: Path, task: Imported) -> bytes | None:
    """The record's patch file as it is (a `git show`, its commit header and all: `git apply`
    skips the header); none when there is no such file, and a warning when it holds no diff."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SourceError(str(path), "", f"cannot read: {exc.strerror or exc}") from None
    if not fix_paths(data):
        task.warnings.append(f"{path}: holds no diff: {task.id} has no fix.patch")
        return None
    return data
