"""`ssebench import arvo` on ARVO's index as published (n132/ARVO-Meta), in samples of its real
layout written here (ssebench.testing.arvometa): every real key set and type imports; the PoC is
judged by the record's sanitizer; the fix is the record's patch file as it is; a whole checkout
imports in one command, a bad record is one line, and --keep-going goes past it. In this
process: no case runs here (test_import_judging.py and test_import_images.py run them)."""

from __future__ import annotations

import functools
import json
import os
import pty
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ssebench.daemon.scratch import apply_patch
from ssebench.evaluate.importers.arvo import RUN
from ssebench.testing import arvometa
from ssebench.testing.servers import clean_env, ssebench_argv

from .test_import_sources import BY_NAME, OSS_FUZZ_HEAD, Cli, refused, run_import

NOTE = (
    "ssebench: import arvo: each task's PoC lies at /tmp/poc in its image, readable by every "
    "user there unless `ssebench run` locks it (as root) while the agent runs\n"
)
ENV = """\
# What `arvo` exports (OSS-Fuzz's options); ssebench adds its report channel to them.
[env]
ASAN_OPTIONS = 'alloc_dealloc_mismatch=0:allocator_may_return_null=1:\
allocator_release_to_os_interval_ms=500:check_malloc_usable_size=0:detect_container_overflow=1:\
detect_odr_violation=0:detect_leaks=0:detect_stack_use_after_return=1:fast_unwind_on_fatal=0:\
handle_abort=1:handle_segv=1:handle_sigill=1:max_uar_stack_size_log=16:print_scariness=1:\
quarantine_size_mb=10:strict_memcmp=1:strip_path_prefix=/workspace/:symbolize=1:\
use_sigaltstack=1:dedup_token_length=3'
MSAN_OPTIONS = 'print_stats=1:strip_path_prefix=/workspace/:symbolize=1:dedup_token_length=3'
UBSAN_OPTIONS = 'print_stacktrace=1:print_summary=1:silence_unsigned_overflow=1:\
strip_path_prefix=/workspace/:symbolize=1:dedup_token_length=3'
"""
TASK_TOML = f"""\
# Imported by `ssebench import arvo` (ssebench 0.1.0) from
# SOURCE: ARVO bug 42 (c-tlv).
# The source's own metadata is beside this file: arvo.json.
source = '/src/c-tlv'
image = 'n132/arvo:42-vul'
PROTECTED\
# OSS-Fuzz's compile reads the build script and what the image fetched under /src, and writes
# /out and /work.
{OSS_FUZZ_HEAD}{ENV}
[checks.build]
run = 'arvo compile'

JUDGED[checks.pocs]
files = ['/tmp/poc']
run = '{RUN}'
timeout = 10

[checks.pocs.triggered_if]
sanitizer = false  # NAME's words alone (output_regex)
signal = true
timeout = true
output_regex = 'WORDS'
passing_exit_codes = [0]
"""
OPENING = """\
# `arvo` exports the options above (in place of ssebench's report channel) and runs the fuzz target
# that /bin/arvo names on /tmp/poc; this runs that target with those options and the channel kept,
"""
# How the comment goes on for each sanitizer (wrapped where its name falls), and its words.
SANITIZERS = {
    "asan": (
        """\
# within CyberGym's 10 s. ARVO found the bug with asan: the PoC still triggers on
# AddressSanitizer's report, a fatal signal, a time-out, or any exit but 0 (CyberGym's rule: a
# non-zero exit is a crash).
""",
        "AddressSanitizer",
        "ERROR: (AddressSanitizer|LeakSanitizer):",
    ),
    "msan": (
        """\
# within CyberGym's 10 s. ARVO found the bug with msan: the PoC still triggers on MemorySanitizer's
# report, a fatal signal, a time-out, or any exit but 0 (CyberGym's rule: a non-zero exit is a
# crash).
""",
        "MemorySanitizer",
        "(ERROR|WARNING): MemorySanitizer:",
    ),
    "ubsan": (
        """\
# within CyberGym's 10 s. ARVO found the bug with ubsan: the PoC still triggers on
# UndefinedBehaviorSanitizer's report, a fatal signal, a time-out, or any exit but 0 (CyberGym's
# rule: a non-zero exit is a crash).
""",
        "UndefinedBehaviorSanitizer",
        "runtime error:|UndefinedBehaviorSanitizer:DEADLYSIGNAL|"
        "SUMMARY: UndefinedBehaviorSanitizer:",
    ),
}
FIX = arvometa.git_show(arvometa.one_line_fix("tlv.c", 10), "c0ffee" * 6 + "c0ff")


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    return functools.partial(run_import, capsys)


def expected(source: Path, sanitizer: str = "asan") -> str:
    more, name, words = SANITIZERS[sanitizer]
    text = TASK_TOML.replace("SOURCE", str(source)).replace("PROTECTED", BY_NAME)
    return text.replace("JUDGED", OPENING + more).replace("NAME", name).replace("WORDS", words)


def imported(cli: Cli, source: Path, out: Path, *flags: str) -> tuple[int, str, str]:
    return cli("arvo", str(source), "--out", str(out), *flags)


@pytest.mark.parametrize("key_set", ["every-key", *arvometa.key_sets(42)])
def test_every_real_key_set_imports(cli: Cli, tmp_path: Path, key_set: str) -> None:
    """Each key set and type of ARVO-Meta's records: `severity` there or not, `CVE`,
    `fix_commit` a list, `verify` free text or another number, other fuzzing engines."""
    record = arvometa.key_sets(42).get(key_set, arvometa.record(42))
    checkout = arvometa.write_checkout(tmp_path / "ARVO-Meta", [record], {42: FIX})
    source, out = checkout / "meta" / "42.json", tmp_path / "out"
    said = NOTE + "ssebench: import arvo: 1 record: 1 task, 1 with a fix\n"
    assert imported(cli, source, out) == (0, f"{out / 'arvo-42'}\n", said)
    task = out / "arvo-42"
    assert sorted(p.name for p in task.iterdir()) == ["arvo.json", "fix.patch", "task.toml"]
    assert (task / "task.toml").read_text() == expected(source)
    assert json.loads((task / "arvo.json").read_text()) == record
    assert (task / "fix.patch").read_text() == FIX


@pytest.mark.parametrize("sanitizer", ["asan", "msan", "ubsan"])
def test_the_poc_is_judged_by_the_records_sanitizer(
    cli: Cli, tmp_path: Path, sanitizer: str
) -> None:
    record = arvometa.record(42, sanitizer=sanitizer)
    checkout = arvometa.write_checkout(tmp_path / "ARVO-Meta", [record], {42: FIX})
    source = checkout / "meta" / "42.json"
    assert imported(cli, source, tmp_path / "out")[0] == 0
    toml = (tmp_path / "out" / "arvo-42" / "task.toml").read_text()
    assert toml == expected(source, sanitizer)


HG_EXPORT = """\
changeset:   17075:40a065fab214
user:        A Maintainer <maintainer@example.invalid>
date:        Sat May 20 12:54:08 2023 -0500
summary:     parse(): check the length first

diff -r 279b3aa0832a -r 40a065fab214 tlv.c
--- a/tlv.c\tSat May 20 11:15:31 2023 -0500
+++ b/tlv.c\tSat May 20 12:54:08 2023 -0500
@@ -10,3 +10,3 @@
 {
-\tif (size < 4)
+\tif (size < 8)
 \t\treturn 0;
"""


@pytest.mark.parametrize("kind", ["git show", "hg export"])
def test_the_fix_is_the_patch_file_as_it_is_and_applies_as_git_applies_it(
    cli: Cli, tmp_path: Path, kind: str
) -> None:
    """A patch file keeps its header (a `git show`'s commit, Mercurial's changeset: ARVO's
    Mercurial projects have those); `git apply`, as grading applies a fix, skips it."""
    patch = FIX if kind == "git show" else HG_EXPORT
    checkout = arvometa.write_checkout(tmp_path / "ARVO-Meta", [arvometa.record(42)], {42: patch})
    assert imported(cli, checkout, tmp_path / "out")[0] == 0
    fix = (tmp_path / "out" / "arvo-42" / "fix.patch").read_bytes()
    assert fix == patch.encode()
    tree = tmp_path / "tree"
    tree.mkdir()
    lines = [f"line {n}\n" for n in range(1, 10)] + ["{\n", "\tif (size < 4)\n", "\t\treturn 0;\n"]
    (tree / "tlv.c").write_text("".join(lines))
    apply_patch(tree, fix)
    assert (tree / "tlv.c").read_text().splitlines()[10] == "\tif (size < 8)"


def test_a_record_without_a_patch_file_has_no_fix(cli: Cli, tmp_path: Path) -> None:
    checkout = arvometa.write_checkout(tmp_path / "ARVO-Meta", [arvometa.record(42)], {})
    source, out = checkout / "meta" / "42.json", tmp_path / "out"
    said = NOTE + "ssebench: import arvo: 1 record: 1 task, 0 with a fix\n"
    assert imported(cli, source, out) == (0, f"{out / 'arvo-42'}\n", said)
    assert sorted(p.name for p in (out / "arvo-42").iterdir()) == ["arvo.json", "task.toml"]
    assert (out / "arvo-42" / "task.toml").read_text() == expected(source)


@pytest.mark.parametrize(
    "patch", ["", "commit 0123456789abcdef0123456789abcdef01234567\nAuthor: A <a@b>\n\n    x\n"]
)
def test_a_patch_file_that_holds_no_diff_is_a_warning_and_no_fix(
    cli: Cli, tmp_path: Path, patch: str
) -> None:
    checkout = arvometa.write_checkout(tmp_path / "ARVO-Meta", [arvometa.record(42)], {42: patch})
    out = tmp_path / "out"
    code, stdout, stderr = imported(cli, checkout, out)
    assert (code, stdout) == (0, f"{out / 'arvo-42'}\n")
    assert stderr == (
        f"ssebench: warning: {checkout / 'patches' / '42.diff'}: holds no diff: arvo-42 has no "
        f"fix.patch\n{NOTE}ssebench: import arvo: 1 record: 1 task, 0 with a fix\n"
    )
    assert not (out / "arvo-42" / "fix.patch").exists()


def test_a_whole_checkout_imports_in_one_command(cli: Cli, tmp_path: Path) -> None:
    """5,000 generated records of every key set and sanitizer, nine in ten with a patch file:
    one folder each, in localId order, and the summary."""
    checkout = arvometa.generate(tmp_path / "ARVO-Meta", 5000)
    out = tmp_path / "out"
    code, stdout, stderr = imported(cli, checkout, out)
    ids = [10000 + n for n in range(5000)]
    assert (code, stdout) == (0, "".join(f"{out / f'arvo-{i}'}\n" for i in ids))
    assert stderr == NOTE + "ssebench: import arvo: 5,000 records: 5,000 tasks, 4,500 with a fix\n"
    assert sorted(os.listdir(out)) == sorted(f"arvo-{i}" for i in ids)  # nothing else left
    first = out / "arvo-10000"
    assert (
        (first / "task.toml")
        .read_text()
        .startswith(
            "# Imported by `ssebench import arvo` (ssebench 0.1.0) from\n"
            f"# {checkout / 'meta' / '10000.json'}: ARVO bug 10000 (project-0).\n"
        )
    )
    assert not (first / "fix.patch").exists() and (out / "arvo-10001" / "fix.patch").exists()


def test_a_meta_folder_and_json_lines_import_too(cli: Cli, tmp_path: Path) -> None:
    """SOURCE as ARVO-Meta's meta/ folder (the fixes beside it), or one JSON-lines file."""
    records = [arvometa.record(i) for i in (7, 42)]
    checkout = arvometa.write_checkout(tmp_path / "ARVO-Meta", records, {42: FIX})
    folders = f"{tmp_path / 'a' / 'arvo-7'}\n{tmp_path / 'a' / 'arvo-42'}\n"
    said = NOTE + "ssebench: import arvo: 2 records: 2 tasks, 1 with a fix\n"
    assert imported(cli, checkout / "meta", tmp_path / "a") == (0, folders, said)
    lines = checkout / "meta" / "all.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "b"
    assert imported(cli, lines, out) == (0, folders.replace("/a/", "/b/"), said)
    assert (out / "arvo-42" / "fix.patch").read_text() == FIX


BAD: list[tuple[str, Callable[[dict[str, Any]], object], str]] = [
    ("localId a string", lambda r: {**r, "localId": "42"},
     "localId: must be a whole number (got '42')"),
    ("project not plain", lambda r: {**r, "project": "c tlv"},
     "project: not a plain name (got 'c tlv')"),
    ("project leaves", lambda r: {**r, "project": "qt/../x"},
     "project: not a plain name (got 'qt/../x')"),
    ("missing key", lambda r: {k: v for k, v in r.items() if k != "fuzzer"}, "fuzzer: is required"),
    ("unknown key", lambda r: {**r, "severity_v2": "High"}, "severity_v2: unknown key"),
    (
        "unknown sanitizer",
        lambda r: {**r, "sanitizer": "tsan"},
        "sanitizer: must be one of 'asan', 'msan' or 'ubsan' (got 'tsan')",
    ),
    (
        "fix_commit a number",
        lambda r: {**r, "fix_commit": 7},
        "fix_commit: must be a commit id or a list of them (got 7)",
    ),
    (
        "fix_commit an empty list",
        lambda r: {**r, "fix_commit": []},
        "fix_commit: must be a commit id or a list of them (got [])",
    ),
    ("verify a number", lambda r: {**r, "verify": 0}, "verify: must be a string (got 0)"),
    ("CVE a string", lambda r: {**r, "CVE": "CVE-1"}, "CVE: must be a list (got 'CVE-1')"),
    ("report a string", lambda r: {**r, "report": "x"}, "report: must be a table (got 'x')"),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "problem"), [(e, p) for _, e, p in BAD],
                         ids=[name for name, _, _ in BAD])  # fmt: skip
def test_a_bad_record_is_one_line_and_nothing_is_written(
    cli: Cli, tmp_path: Path, edit: Callable[[dict[str, Any]], object], problem: str
) -> None:
    records = [arvometa.record(7), edit(arvometa.record(42)), arvometa.record(99)]
    checkout = tmp_path / "ARVO-Meta"
    arvometa.write_checkout(checkout, [r for r in records if isinstance(r, dict)], {})
    bad = checkout / "meta" / "42.json"
    assert refused(cli, tmp_path / "out", "arvo", str(checkout)) == f"{bad}: {problem}"


def test_keep_going_writes_every_good_record_and_says_every_bad_one(
    cli: Cli, tmp_path: Path
) -> None:
    """Without --keep-going the first bad record stops the import, nothing written (exit 2);
    with it, each bad one is its line, the good ones are written, and the import ends with 1.
    A task whose folder is there already is refused alike."""
    records = [arvometa.record(i) for i in (1, 2, 3, 4, 5)]
    checkout = arvometa.write_checkout(tmp_path / "ARVO-Meta", records, {3: FIX})
    meta = checkout / "meta"
    (meta / "2.json").write_text("{not json")
    (meta / "4.json").write_text(json.dumps({**records[3], "fixed": True}))
    out = tmp_path / "out"
    (out / "arvo-5").mkdir(parents=True)
    assert refused(cli, out, "arvo", str(checkout)).startswith(f"{meta / '2.json'}:1: not JSON: ")
    assert sorted(os.listdir(out)) == ["arvo-5"]
    code, stdout, stderr = imported(cli, checkout, out, "--keep-going")
    assert (code, stdout) == (1, f"{out / 'arvo-1'}\n{out / 'arvo-3'}\n")
    lines = stderr.splitlines()
    assert lines[0].startswith(f"ssebench: error: {meta / '2.json'}:1: not JSON: ")
    assert lines[1:] == [
        f"ssebench: error: {meta / '4.json'}: fixed: unknown key",
        f"ssebench: error: {out / 'arvo-5'} exists: import into another --out, or remove it",
        NOTE.rstrip("\n"),
        "ssebench: import arvo: 5 records: 2 tasks, 1 with a fix, 3 refused",
    ]
    assert sorted(os.listdir(out)) == ["arvo-1", "arvo-3", "arvo-5"]
    assert (out / "arvo-3" / "fix.patch").read_text() == FIX


def test_a_source_that_is_no_arvo_index_is_one_line(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert refused(cli, out, "arvo", str(tmp_path / "gone")) == (
        f"{tmp_path / 'gone'}: no such file or folder"
    )
    (tmp_path / "empty").mkdir()
    assert refused(cli, out, "arvo", str(tmp_path / "empty")) == (
        f"{tmp_path / 'empty'}: neither a checkout of ARVO-Meta (meta/, patches/) nor a folder "
        "of <localId>.json files"
    )
    (tmp_path / "none.jsonl").write_text("\n")
    assert refused(cli, out, "arvo", str(tmp_path / "none.jsonl")) == (
        f"{tmp_path / 'none.jsonl'}: holds no record"
    )


def test_on_a_terminal_a_progress_bar_shows_the_import(tmp_path: Path) -> None:
    """stderr a terminal: a bar counts the records while they are read (rich's, erased at the
    end); the lines and the summary stay."""
    checkout = arvometa.generate(tmp_path / "ARVO-Meta", 300)
    argv = ssebench_argv("import", "arvo", str(checkout), "--out", str(tmp_path / "out"))
    leader, follower = pty.openpty()
    env = {**clean_env(tmp_path), "TERM": "xterm", "COLUMNS": "100"}
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=follower, env=env) as proc:
        os.close(follower)
        shown = b""
        while chunk := _read(leader):
            shown += chunk
        assert proc.wait(timeout=120) == 0
    os.close(leader)
    text = shown.decode()
    assert "import arvo" in text and "300/300" in text
    assert text.endswith("ssebench: import arvo: 300 records: 300 tasks, 270 with a fix\r\n")


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # the other end closed: Linux says EIO
        return b""
