"""SEC-bench instances imported in each of its evaluator's modes and graded in a stand-in of
their evaluation image (`grade --tasks --backend docker`, one run of many predictions): the
image's harness, built from the tree by `secb build`, prints each of SEC-bench's six patterns
(AddressSanitizer's and UBSan's runtime error for real, under gcc; the others as those runtimes
print them, for gcc has no MemorySanitizer) or ends without one as real harnesses do. Each
patch picks what the harness does; each verdict is the mode's, as secb/evaluator/
eval_instances.py decides it.

It needs Docker and the base image `scripts/container.sh` builds; without them it is skipped.
"""

from __future__ import annotations

import difflib
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ssebench.testing.images import build_image, docker_missing, remove_image

from . import benchsamples

MISSING = docker_missing(benchsamples.BASE)
pytestmark = [
    pytest.mark.container,
    pytest.mark.timeout(1200),
    pytest.mark.skipif(MISSING is not None, reason=f"stand-in image: {MISSING}"),
]
RunCli = Callable[..., subprocess.CompletedProcess[str]]
MODES = ("strict", "medium", "generous")
HARNESS = r"""/* c-judge: a harness that does what BEHAVIOUR says with its input. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEHAVIOUR "shipped" /* the bug: as "asan" */

static const char *printed[][2] = {
    {"msan-error", "==1==ERROR: MemorySanitizer: requested allocation size 0x100000000000"},
    {"msan-warning", "==1==WARNING: MemorySanitizer: use-of-uninitialized-value"},
    {"ubsan-deadlysignal", "UndefinedBehaviorSanitizer:DEADLYSIGNAL"},
    {"lsan", "==1==ERROR: LeakSanitizer: detected memory leaks"},
    {"ubsan-summary", "SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior judge.c:9:9"},
};

int main(int argc, char **argv)
{
	const char *behaviour = BEHAVIOUR;
	int total = INT_MAX;

	if (!strcmp(behaviour, "asan") || !strcmp(behaviour, "shipped")) {
		char *copy = malloc(4);
		strcpy(copy, argv[1]); /* the PoC's path: longer than 4 */
		free(copy);
	} else if (!strcmp(behaviour, "ubsan-runtime-error")) {
		total += argc;
		printf("%d\n", total);
	} else if (!strcmp(behaviour, "abort")) {
		abort();
	}
	for (size_t i = 0; i < sizeof printed / sizeof *printed; i++)
		if (!strcmp(behaviour, printed[i][0]))
			fprintf(stderr, "%s\n", printed[i][1]);
	if (!strcmp(behaviour, "exit-1"))
		return 1;
	return strcmp(behaviour, "clean") ? 2 : 0; /* 2: the input refused, the instance's exit_code */
}
"""
BUILD = """\
#!/bin/bash -eu
$CC $CFLAGS -fsanitize=address,undefined judge.c -o "$OUT/judge"
"""
SECB = """\
#!/bin/bash
case "$1" in
  build) exec compile ;;
  repro) exec "$OUT/judge" /testcase/poc ;;
  *) echo "usage: secb build|repro" >&2; exit 2 ;;
esac
"""
# What each patch makes the harness do, and whether each mode reads it as fixed.
BEHAVIOURS = {
    "asan": (False, False, False),
    "ubsan-runtime-error": (False, False, False),
    "msan-error": (False, False, False),
    "msan-warning": (False, False, False),
    "ubsan-deadlysignal": (False, False, False),
    "lsan": (False, False, False),
    "ubsan-summary": (False, False, False),
    "clean": (True, True, True),
    "exit-code": (False, True, True),
    "exit-1": (False, False, True),
    "abort": (False, False, True),
}


def task_id(mode: str) -> str:
    return f"c-judge.{mode}-1"


def patch(behaviour: str) -> str:
    after = HARNESS.replace('"shipped" /*', f'"{behaviour}" /*', 1)
    lines = difflib.unified_diff(
        HARNESS.splitlines(keepends=True), after.splitlines(keepends=True), "a/judge.c",
        "b/judge.c",
    )  # fmt: skip
    return "diff --git a/judge.c b/judge.c\n" + "".join(lines)


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One instance imported in each mode, its stand-in image built once and named for each."""
    root = tmp_path_factory.mktemp("secb-modes")
    context = benchsamples.oss_fuzz_context(root / "image", "secb", SECB, BUILD)
    (context / "c-judge").mkdir()
    (context / "c-judge" / "judge.c").write_text(HARNESS)
    (context / "poc").write_text("crash-input\n")
    dockerfile = context / "Dockerfile"
    dockerfile.write_text(
        dockerfile.read_text() + "COPY c-judge /src/c-judge\nCOPY poc /testcase/poc\n"
        "WORKDIR /src/c-judge\n"
    )
    path, _ = benchsamples.secb_instance(root)
    base = json.loads(path.read_text())
    tasks = root / "tasks"
    images = []
    for mode in MODES:
        instance = {**base, "instance_id": task_id(mode), "work_dir": "/src/c-judge",
                    "patch": patch("clean"), "exit_code": 2}  # fmt: skip
        source = root / f"{mode}.json"
        source.write_text(json.dumps(instance))
        argv = ["ssebench", "import", "secb", str(source), "--mode", mode, "--out", str(tasks)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        images.append(f"hwiwonlee/secb.eval.x86_64.{task_id(mode)}:patch")
    try:
        build_image(images[0], context)
        for image in images[1:]:
            subprocess.run(["docker", "tag", images[0], image], check=True, timeout=60)
        yield tasks
    finally:
        for image in images:
            remove_image(image)


def test_each_mode_judges_each_ending_as_secbs_evaluator(
    run_cli: RunCli, tasks: Path, tmp_path: Path
) -> None:
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(
        json.dumps({"instance_id": task_id(mode), "model_name_or_path": behaviour,
                    "model_patch": patch(behaviour)}) + "\n"
        for behaviour in BEHAVIOURS for mode in MODES
    ))  # fmt: skip
    out = tmp_path / "out"
    args = ["--tasks", str(tasks), "--predictions", str(predictions), "--out", str(out)]
    done = run_cli("grade", *args, "--backend", "docker", "-j", "2", timeout=1100)
    summary = json.loads(done.stdout)
    assert (done.returncode, summary["errors"]) == (0, 0), done.stderr
    verdicts = {
        (behaviour, mode): json.loads((out / behaviour / task_id(mode) / "result.json").read_text())
        for behaviour in BEHAVIOURS
        for mode in MODES
    }
    resolved = {key: result["resolved"] for key, result in verdicts.items()}
    expected = {(b, mode): BEHAVIOURS[b][i] for b in BEHAVIOURS for i, mode in enumerate(MODES)}
    assert resolved == expected
    builds = {(r["patch"]["applied"], r["checks"][0]["status"]) for r in verdicts.values()}
    assert builds == {(True, "passed")}
