"""Samples in the layout of ARVO's public index, n132/ARVO-Meta, written here (never copied from
it): `meta/<localId>.json` records of each real key set and `patches/<localId>.diff`, each a
`git show` of a fixing commit (its header, then the diff). Shared by the importer's tests and
bench/importing.py. Nothing here imports pytest.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# A report as ARVO keeps it: the OSS-Fuzz issue's comments, the first ClusterFuzz's.
REPORT = """\
Detailed Report: https://oss-fuzz.invalid/testcase?key={id}

Project: {project}
Fuzzing Engine: libFuzzer
Fuzz Target: {project}_fuzzer
Job Type: libfuzzer_{sanitizer}_{project}
Platform Id: linux

Crash Type: {crash}
Crash Address: 0x602000000018
Crash State:
  parse
  main

Sanitizer: {sanitizer}

Reproducer Testcase: https://oss-fuzz.invalid/download?testcase_id={id}
"""
CRASHES = {
    "asan": "Heap-buffer-overflow READ 4",
    "msan": "Use-of-uninitialized-value",
    "ubsan": "Index-out-of-bounds",
}


def record(local_id: int, project: str = "c-tlv", sanitizer: str = "asan") -> dict[str, Any]:
    """A record of the key set most of ARVO-Meta's have (4,511 of 4,993): every key, with
    `severity`, and `fix_commit` one commit id."""
    commit = f"{local_id:040x}"
    crash = CRASHES[sanitizer]
    text = REPORT.format(id=local_id, project=project, sanitizer=sanitizer, crash=crash)
    return {
        "fix": f"https://example.invalid/{project}/commit/{commit}",
        "verify": "0",
        "localId": local_id,
        "project": project,
        "fuzzer": "libfuzzer",
        "sanitizer": sanitizer,
        "crash_type": crash,
        "severity": "Medium",
        "report": {
            "comments": [
                {
                    "localId": local_id,
                    "projectName": "oss-fuzz",
                    "commenter": {"displayName": "ClusterFuzz-External"},
                    "content": text,
                    "timestamp": 1600000000,
                }
            ]
        },
        "fix_commit": commit,
        "repo_addr": f"https://example.invalid/{project}.git",
    }


def key_sets(local_id: int) -> dict[str, dict[str, Any]]:
    """The other key sets and types of ARVO-Meta's records, each a variant of `record`: no
    `severity` (480 files), a `CVE` list (2), `fix_commit` a list (483), `verify` free text
    (once) and other numbers, other fuzzing engines."""
    base = record(local_id)
    no_severity = {k: v for k, v in base.items() if k != "severity"}
    commits = [f"{local_id + n:040x}" for n in range(3)]
    return {
        "no-severity": no_severity,
        "cve": {**base, "CVE": ["CVE-2020-0001"]},
        "fix-commit-list": {**base, "fix_commit": commits},
        "verify-text": {**base, "verify": "The fix adds a length-check"},
        "verify-minus-one": {**no_severity, "verify": "-1", "fuzzer": "afl"},
        "honggfuzz": {**base, "fuzzer": "honggfuzz", "verify": "2"},
    }


def git_show(diff: str, commit: str, message: str = "Fix an overflow found by OSS-Fuzz") -> str:
    """`git show` of a commit whose diff is `diff`: the header ARVO-Meta's patch files keep."""
    return (
        f"commit {commit}\n"
        "Author: A Maintainer <maintainer@example.invalid>\n"
        "Date:   Thu Sep 17 00:21:02 2020 +0200\n\n"
        f"    {message}\n    \n"
        "    https://oss-fuzz.invalid/issues/detail?id=1\n\n"
        f"{diff}"
    )


def write_checkout(
    root: Path, records: Iterable[Mapping[str, Any]], patches: Mapping[int, str]
) -> Path:
    """An ARVO-Meta checkout at `root`: each record as `meta/<localId>.json` (indented as the
    real files are), each patch as `patches/<localId>.diff`."""
    (root / "meta").mkdir(parents=True, exist_ok=True)
    (root / "patches").mkdir(exist_ok=True)
    for item in records:
        text = json.dumps(item, indent=4)
        (root / "meta" / f"{item['localId']}.json").write_text(text)
    for local_id, patch in patches.items():
        (root / "patches" / f"{local_id}.diff").write_text(patch)
    return root


def one_line_fix(name: str, line: int) -> str:
    """A small diff, as `git diff` writes it, changing one line of `name`."""
    return (
        f"diff --git a/{name} b/{name}\n"
        "index 1111111..2222222 100644\n"
        f"--- a/{name}\n+++ b/{name}\n"
        f"@@ -{line},3 +{line},3 @@ int parse(const unsigned char *data, size_t size)\n"
        " {\n-\tif (size < 4)\n+\tif (size < 8)\n \t\treturn 0;\n"
    )


def generate(root: Path, count: int, first: int = 10000) -> Path:
    """A checkout of `count` records (localIds from `first`), cycling through the key sets
    and sanitizers, nine in ten with a patch file."""
    sanitizers = ("asan", "msan", "ubsan")
    records, patches = [], {}
    for n in range(count):
        local_id = first + n
        variants = list(key_sets(local_id).values())
        item = record(local_id, f"project-{n % 97}", sanitizers[n % 3])
        if n % 4:
            item = {**variants[n % len(variants)], "sanitizer": sanitizers[n % 3]}
        records.append(item)
        if n % 10:
            patches[local_id] = git_show(one_line_fix(f"src/parse{n % 7}.c", 10), f"{n:040x}")
    return write_checkout(root, records, patches)
