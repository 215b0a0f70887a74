"""Imported tasks where their benchmarks run them: an upstream task, a SEC-bench instance and an
ARVO bug, each in a stand-in of its benchmark's image built here offline (benchsamples.py). In a
container of its image as an agent's would run (`ssebench check`), the tree as shipped fails its
PoCs at level 0 with the exact report; graded in a fresh container (`--backend docker`), its
fix resolves it (the tree at its own path, the image's /out written, the PoC only the PoC check
reads) and an empty patch does not; `validate --tasks` finds the dataset sound, and a rerun
reuses every verdict. On this machine, a path only the image has is one line.

It needs Docker and the base image `scripts/container.sh` builds; without them it is skipped,
and says so. The stand-in images are removed afterwards.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ssebench.testing.images import (
    build_image,
    docker_missing,
    remove_image,
    ssebench_in_image,
)

from . import benchsamples
from .test_import_upstream import AS_SHIPPED_AT_LEVEL_0, POC_REASON

MISSING = docker_missing(benchsamples.BASE)
pytestmark = [
    pytest.mark.container,
    pytest.mark.timeout(900),
    pytest.mark.skipif(MISSING is not None, reason=f"stand-in images: {MISSING}"),
]
RunCli = Callable[..., subprocess.CompletedProcess[str]]
UPSTREAM, SECB, ARVO = "c-rle-1", benchsamples.SECB_ID, f"arvo-{benchsamples.ARVO_ID}"
IMAGES = {
    UPSTREAM: benchsamples.UPSTREAM_IMAGE,
    SECB: benchsamples.SECB_IMAGE,
    ARVO: benchsamples.ARVO_IMAGE,
}
ONE_POC_AT_LEVEL_0 = f"""\
{POC_REASON}

Checks:
- build: passed
- PoCs: FAILED (passed 0 of 1; stopped at the first that still triggers the bug)
- intent tests: passed (the task has none)
- functional tests: passed (the task has none)

Full log (PoCs):
"""
AT_LEVEL_0 = {
    UPSTREAM: (AS_SHIPPED_AT_LEVEL_0, "heap-buffer-overflow"),
    SECB: (ONE_POC_AT_LEVEL_0, "heap-buffer-overflow"),
    ARVO: (ONE_POC_AT_LEVEL_0, "stack-buffer-overflow"),
}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The three samples imported into one dataset (ARVO's from a checkout of its index, the
    fix its patch file), and their images built from their own contexts."""
    root = tmp_path_factory.mktemp("benchmarks")
    upstream = benchsamples.upstream_task(root)
    instances, secb_context = benchsamples.secb_instance(root)
    metadata, arvo_context = benchsamples.arvo_metadata(root)
    tasks = root / "tasks"
    for source in (["upstream", str(upstream)], ["secb", str(instances)],
                   ["arvo", str(metadata)]):  # fmt: skip
        done = subprocess.run(["ssebench", "import", *source, "--out", str(tasks)],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
    contexts = {UPSTREAM: upstream, SECB: secb_context, ARVO: arvo_context}
    try:
        for task, context in contexts.items():
            build_image(IMAGES[task], context)
        yield tasks
    finally:
        for image in IMAGES.values():
            remove_image(image)


@pytest.mark.parametrize("task", [UPSTREAM, SECB, ARVO])
def test_as_shipped_in_its_image_it_fails_its_pocs_at_level_0(dataset: Path, task: str) -> None:
    args = ["check", "--task", "/task", "--difficulty", "0", "--quiet"]
    done = ssebench_in_image(IMAGES[task], args, [f"{dataset / task}:/task:ro"])
    assert done.returncode == 1, done.stderr
    head, marker, log = done.stdout.partition("Full log (PoCs):\n")
    expected, bug = AT_LEVEL_0[task]
    assert head + marker == expected
    assert f"ERROR: AddressSanitizer: {bug}" in log


# What each build says first: upstream's build.sh its shell's options (its #! line held), the
# OSS-Fuzz stand-ins' where they build (the tree's own path in the image).
BUILT = {
    UPSTREAM: "shell options: ehuB",
    SECB: "building in /src/c-rle",
    ARVO: "building in /src/c-tlv",
}


@pytest.mark.parametrize("task", [UPSTREAM, SECB, ARVO])
def test_graded_in_its_image_the_fix_resolves_it_and_an_empty_patch_does_not(
    run_cli: RunCli, dataset: Path, task: str, tmp_path: Path
) -> None:
    empty = tmp_path / "empty.diff"
    empty.write_text("")
    verdicts = {}
    for name, patch in (("fix", dataset / task / "fix.patch"), ("empty", empty)):
        logs = tmp_path / name
        args = ["--task", str(dataset / task), "--patch", str(patch), "--logs", str(logs)]
        done = run_cli("grade", *args, "--backend", "docker", "--quiet", timeout=600)
        assert done.returncode == (0 if name == "fix" else 1), done.stderr
        grade = json.loads(done.stdout)
        verdicts[name] = [check["status"] for check in grade["checks"]]
        assert (logs / "build-0.log").read_text().splitlines()[0] == BUILT[task]
    shipped = ["passed", "failed", "failed", "passed"] if task == UPSTREAM else [
        "passed", "failed", "passed", "passed"
    ]  # fmt: skip
    assert verdicts == {"fix": ["passed"] * 4, "empty": shipped}


def test_validate_finds_the_dataset_sound_and_a_rerun_reuses_it(
    run_cli: RunCli, dataset: Path, tmp_path: Path
) -> None:
    out = tmp_path / "validated"
    args = ["validate", "--tasks", str(dataset), "--out", str(out), "--backend", "docker"]
    first = run_cli(*args, "-j", "2", "--json", timeout=900)
    assert first.returncode == 0, first.stderr
    ids = sorted([UPSTREAM, SECB, ARVO])
    summary = {
        "total": 3, "sound": 3, "not_sound": 0, "errors": 0, "sound_ids": ids,
        "not_sound_ids": [], "error_ids": [],
        "tasks": [{"task": task, "verdict": "sound", "reused": False, "problems": [],
                   "flaky": [], "warnings": [], "error": None} for task in ids],
    }  # fmt: skip
    assert json.loads(first.stdout) == summary
    assert json.loads((out / "summary.json").read_text()) == summary
    again = run_cli(*args, timeout=300)
    assert (again.returncode, again.stdout) == (
        0,
        f"ssebench validate: 3 tasks in {dataset} (1 run on each tree)\n\n"
        "task             verdict  why\n"
        f"{ARVO}    sound\n"
        f"{UPSTREAM}          sound\n"
        f"{SECB}  sound\n\n"
        "The dataset is sound: 3 of 3 tasks are sound.\n",
    )
    assert again.stderr == "".join(
        f"ssebench: [{n}/3] {task}: sound (reused)\n" for n, task in enumerate(ids, 1)
    )


def test_on_this_machine_a_path_only_the_image_has_is_one_line(
    run_cli: RunCli, dataset: Path
) -> None:
    done = run_cli("check", "--task", str(dataset / SECB))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"ssebench: error: {dataset / SECB / 'task.toml'}: source: /src/c-rle: no such folder "
        f"on this machine; if the task's image {benchsamples.SECB_IMAGE} has it, grade with "
        "--backend docker or run ssebench in the image\n"
    )


def test_unconfined_the_build_would_read_the_poc_and_the_fix(dataset: Path) -> None:
    """The positive control of the stand-ins' build scripts: what they may not read is there."""
    args = ["check", "--task", "/task", "--difficulty", "3", "--quiet", "--no-isolation"]
    done = ssebench_in_image(IMAGES[SECB], args, [f"{dataset / SECB}:/task:ro"])
    assert done.stdout.startswith("test_patch result: FAILED. The project failed to build."), (
        done.stderr
    )
    assert "the build could read /testcase/crash-1.bin" in done.stdout
