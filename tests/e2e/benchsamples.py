"""Samples of other benchmarks' tasks, in each one's layout (docs/importing.md), made here from
the bundled C example (c-rle) and a task of our own (c-tlv, tlvtask.py), never copied from the
benchmarks: an upstream task folder with every required key, scripts in upstream's contract,
PoCs and diffs; a SEC-bench instance; an ARVO-Meta checkout of one bug (its record and its
patch file). For each, the build context of a stand-in image (FROM the offline base image
scripts/container.sh makes) whose `secb` and `arvo` commands follow the documented contract."""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

from ssebench.evaluate.importers.arvo import OPTIONS
from ssebench.testing import arvometa

from . import tlvtask
from .test_grade_patch import BUILD_OUTPUTS, EXAMPLES

BASE = "ssebench-base:bookworm"
C_RLE = EXAMPLES / "c-rle"
UPSTREAM_ID = "c-rle-1"
UPSTREAM_IMAGE = f"ghcr.io/42-b3yond-6ug/ssebench/case/standin/{UPSTREAM_ID}:pilot-v1"
SECB_ID = "c-rle.standin-1"
SECB_IMAGE = f"hwiwonlee/secb.eval.x86_64.{SECB_ID}:patch"
ARVO_ID = 99999001  # no ARVO bug has it
ARVO_IMAGE = f"n132/arvo:{ARVO_ID}-vul"
ASAN_CHECK = "AddressSanitizer|Segmentation fault|\\(core dumped\\)"

CONFIG = f"""\
id: {UPSTREAM_ID}
project: c-rle
repository: https://example.invalid/c-rle
language: c
source: /src/c-rle
task_description:
  issue: |
    `rle decode` writes past its output buffer on a crafted input.
  crash_report:
    - reports/crash-1.txt
scripts:
  build: scripts/build.sh
  run: scripts/run.sh
  test: scripts/test.sh
files:
  patch: diffs/patch.diff
  poc: [pocs/crash-1.bin, pocs/crash-2.bin, pocs/crash-3.bin]
  future_test: diffs/test.diff
sanitizer: address
type: heap-buffer-overflow
originality: crafted
"""
# Upstream's contract: each runs in the source folder; run.sh gets a PoC's absolute path and
# exits 1 when the bug shows. build.sh says what its #! line gave it (-e and -u).
SCRIPTS = {
    "build.sh": (
        '#!/bin/bash -eu\necho "shell options: $-"\n'
        'if cat "${SSE_TASK_DIR:-/nowhere}/fix.patch" 2>/dev/null; then exit 1; fi\nmake -j2 rle\n'
    ),
    "run.sh": (
        "#!/bin/bash -u\n"
        'out=$(./rle decode "$1" 2>&1 >/dev/null)\n'
        f'if grep -qE \'{ASAN_CHECK}\' <<<"$out"; then echo "$out"; exit 1; fi\n'
    ),
    "test.sh": "#!/bin/bash -eu\nmake -j2\nmake check\n",
}
UPSTREAM_DOCKERFILE = f"""\
FROM {BASE}
COPY project /src/c-rle
COPY sse/config.yaml /ssebench/config.yaml
COPY sse/build.sh sse/run.sh sse/test.sh /ssebench/scripts/
COPY sse/pocs /ssebench/pocs
COPY sse/reports /ssebench/reports
COPY sse/diffs /ssebench/diffs
WORKDIR /src/c-rle
"""


def hidden_tests() -> str:
    """upstream's test.diff: the example's intent tests, added to the tree's `make check`."""
    bounds = (C_RLE / "intent" / "test_bounds.sh").read_text()
    bounds = bounds.replace('RLE="${SSE_SOURCE_DIR:-.}/rle"', "RLE=./rle")
    makefile = (C_RLE / "src" / "Makefile").read_text()
    checked = makefile.replace("\tsh tests/cli.sh\n", "\tsh tests/cli.sh\n\tsh tests/bounds.sh\n")
    return _diff("Makefile", makefile, checked) + _diff("tests/bounds.sh", None, bounds)


def _diff(name: str, before: str | None, after: str) -> str:
    old = before.splitlines(keepends=True) if before is not None else []
    head = f"diff --git a/{name} b/{name}\n" + ("new file mode 100644\n" if before is None else "")
    lines = difflib.unified_diff(
        old, after.splitlines(keepends=True), "/dev/null" if before is None else f"a/{name}",
        f"b/{name}",
    )  # fmt: skip
    return head + "".join(lines)


def upstream_task(root: Path) -> Path:
    """datasets/standin/c-rle-1: a Dockerfile and sse/, and the project its image copies."""
    folder = root / "datasets" / "standin" / UPSTREAM_ID
    shutil.copytree(C_RLE / "src", folder / "project", ignore=BUILD_OUTPUTS)
    sse = folder / "sse"
    for name, text in SCRIPTS.items():
        (sse / name).parent.mkdir(parents=True, exist_ok=True)
        (sse / name).write_text(text)
    shutil.copytree(C_RLE / "pocs", sse / "pocs", ignore=shutil.ignore_patterns("*.py"))
    (sse / "reports").mkdir()
    (sse / "reports" / "crash-1.txt").write_text("ERROR: AddressSanitizer: heap-buffer-overflow\n")
    (sse / "diffs").mkdir()
    shutil.copy(C_RLE / "fix.patch", sse / "diffs" / "patch.diff")
    (sse / "diffs" / "test.diff").write_text(hidden_tests())
    (sse / "config.yaml").write_text(CONFIG)
    (folder / "Dockerfile").write_text(UPSTREAM_DOCKERFILE)
    return folder


# The stand-ins' OSS-Fuzz side: `compile` runs $SRC/build.sh in the project's folder.
COMPILE = '#!/bin/bash -eu\nexec "$SRC/build.sh"\n'
# No build may read the PoC, nor the fix and the metadata that holds it (the task folder's).
NO_PEEKING = """\
for secret in /testcase/* /tmp/poc "$SSE_TASK_DIR"/fix.patch "$SSE_TASK_DIR"/*.json; do
    if cat "$secret" >/dev/null 2>&1; then echo "the build could read $secret"; exit 1; fi
done
"""
RLE_BUILD = (
    """\
#!/bin/bash -eu
echo "building in $PWD"
"""
    + NO_PEEKING
    + """\
make -j2 rle
cp rle "$OUT/rle"
"""
)
SECB = """\
#!/bin/bash
# SEC-bench's contract, stood in for: `secb build` builds the project (OSS-Fuzz's compile) and
# fails when it does; `secb repro` runs the harness on the PoC in /testcase, its exit status
# the harness's.
case "$1" in
  build) exec compile ;;
  repro) exec "$OUT/rle" decode /testcase/crash-1.bin ;;
  *) echo "usage: secb build|repro" >&2; exit 2 ;;
esac
"""
# ARVO's contract, stood in for in the layout of the /bin/arvo its images hold (ARVO's
# arvo/reproducer.py writes it): export the sanitizer options and the build's variables, then
# `arvo compile` rebuilds the project (OSS-Fuzz's compile) and `arvo` (or `arvo run`) runs the
# fuzz target on /tmp/poc.
ARVO = (
    "#!/bin/bash\n"
    + "".join(f"export {name}={value}\n" for name, value in OPTIONS.items())
    + """export FUZZER_ARGS="-rss_limit_mb=2560 -timeout=25"
export AFL_FUZZER_ARGS="-m none"
export FUZZING_ENGINE=libfuzzer
export SANITIZER=address
export ARCHITECTURE=x86_64
export FUZZING_LANGUAGE=c

if [ "$#" -ge 1 ]; then
first_param="$1"

if [ "$first_param" = "compile" ]; then
    compile
elif [ "$first_param" = "run" ]; then
    /out/tlv_fuzzer /tmp/poc

else
    echo "Unknown command: $first_param"
fi
    else
        /out/tlv_fuzzer /tmp/poc

fi
"""
)
OSS_FUZZ = f"""\
FROM {BASE}
ENV SRC=/src OUT=/out WORK=/work CC=gcc CFLAGS="-g -O1 -fno-omit-frame-pointer"
RUN mkdir -p /out /work
COPY compile /usr/local/bin/
COPY {{command}} {{bin}}/
COPY build.sh /src/build.sh
"""


def secb_instance(root: Path) -> tuple[Path, Path]:
    """A SEC-bench instance (JSON) of c-rle's first PoC, and its stand-in image's context."""
    context = oss_fuzz_context(root / "secb-image", "secb", SECB, RLE_BUILD)
    shutil.copytree(C_RLE / "src", context / "c-rle", ignore=BUILD_OUTPUTS)
    (context / "testcase").mkdir()
    shutil.copy(C_RLE / "pocs" / "crash-1.bin", context / "testcase")
    dockerfile = context / "Dockerfile"
    dockerfile.write_text(
        dockerfile.read_text() + "COPY c-rle /src/c-rle\nCOPY testcase /testcase\n"
        "WORKDIR /src/c-rle\n"
    )
    instance = {
        "instance_id": SECB_ID, "repo": "example/c-rle", "project_name": "c-rle", "lang": "c",
        "work_dir": "/src/c-rle", "sanitizer": "address",
        "bug_description": "rle decode: heap-buffer-overflow on a repeat run",
        "base_commit": "0" * 40, "build_sh": RLE_BUILD, "secb_sh": SECB,
        "dockerfile": dockerfile.read_text(), "patch": (C_RLE / "fix.patch").read_text(),
        "exit_code": 2,  # the fixed decoder refuses the PoC: "corrupt input", status 2
        "sanitizer_report": "==1==ERROR: AddressSanitizer: heap-buffer-overflow",
        "bug_report": "https://example.invalid/c-rle/issues/1",
    }  # fmt: skip
    path = root / "instances.jsonl"
    path.write_text(json.dumps(instance) + "\n")
    return path, context


def arvo_metadata(root: Path) -> tuple[Path, Path]:
    """ARVO-Meta's record of c-tlv's bug (`meta/<localId>.json` of a checkout, its fix beside
    in `patches/`), and its stand-in image's context."""
    context = oss_fuzz_context(root / "arvo-image", "arvo", ARVO, tlvtask.BUILD_SH, "/bin")
    (context / "c-tlv").mkdir()
    (context / "c-tlv" / "tlv.c").write_text(tlvtask.TLV_C)
    (context / "poc").write_bytes(tlvtask.POC)
    dockerfile = context / "Dockerfile"
    dockerfile.write_text(
        dockerfile.read_text() + "COPY c-tlv /src/c-tlv\nCOPY poc /tmp/poc\nWORKDIR /src/c-tlv\n"
    )
    record = {**arvometa.record(ARVO_ID, "c-tlv"), "crash_type": "Stack-buffer-overflow WRITE"}
    fix = arvometa.git_show(ARVO_FIX, record["fix_commit"])
    checkout = arvometa.write_checkout(root / "ARVO-Meta", [record], {ARVO_ID: fix})
    return checkout / "meta" / f"{ARVO_ID}.json", context


# c-tlv's fix as `git show` prints its diff.
ARVO_FIX = "diff --git a/tlv.c b/tlv.c\n" + tlvtask.FIX


def oss_fuzz_context(
    context: Path, command: str, script: str, build: str, folder: str = "/usr/local/bin"
) -> Path:
    """The build context of an OSS-Fuzz-style stand-in image: `compile` running $SRC/build.sh,
    the benchmark's `command` (its `script`) in `folder`; the Dockerfile to extend."""
    context.mkdir(parents=True)
    for name, text in (("compile", COMPILE), (command, script), ("build.sh", build)):
        (context / name).write_text(text)
        (context / name).chmod(0o755)
    (context / "Dockerfile").write_text(OSS_FUZZ.format(command=command, bin=folder))
    return context
