"""`ssebench import`: a bad source of every kind is one line naming the file and the key, exit
status 2, and nothing written (a JSON-lines file with one bad instance among good ones
included). Run in this process: no case runs here."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ssebench.core.cli import main
from ssebench.evaluate.importers import FORMATS, Format
from ssebench.evaluate.importers.common import Imported, Records, Request, SourceError

from . import benchsamples

Cli = Callable[..., tuple[int, str, str]]


def run_import(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`ssebench import ARGS` in this process: its exit status, stdout and stderr."""
    with pytest.raises(SystemExit) as ended:
        main(["import", *args])
    out, err = capsys.readouterr()
    return int(ended.value.code or 0), out, err


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    return functools.partial(run_import, capsys)


def refused(cli: Cli, out: Path, *args: str) -> str:
    """The one line a bad source gives; nothing is written under `out`."""
    before = sorted(out.rglob("*")) if out.exists() else None
    code, stdout, stderr = cli(*args, "--out", str(out))
    assert (code, stdout, stderr.count("\n")) == (2, "", 1), stderr
    assert (sorted(out.rglob("*")) if out.exists() else None) == before
    return stderr.removeprefix("ssebench: error: ").rstrip("\n")


# --- upstream --------------------------------------------------------------------------------

UPSTREAM_EDITS: list[tuple[str, Callable[[str], str], str]] = [
    ("unknown key", lambda c: c + "extra: 1\n", "extra: unknown key"),
    ("missing key", lambda c: c.replace("language: c\n", ""), "language: is required"),
    ("key twice", lambda c: c + "id: c-rle-1\n", "not valid YAML: 'id' is given twice (line 1)"),
    ("not YAML", lambda c: c + "files: [\n", "not valid YAML: "),
    ("not a mapping", lambda c: "- a\n- b\n", "must be a mapping of keys (got list)"),
    (
        "id not plain",
        lambda c: c.replace("id: c-rle-1", "id: ../c-rle-1"),
        "id: not an upstream task id: letters and digits joined by ., _, __ or -, at most 128 "
        "characters (got '../c-rle-1')",
    ),
    (
        "id not the folder's",
        lambda c: c.replace("id: c-rle-1", "id: c-rle-2"),
        "id: c-rle-2 is not the folder's name (c-rle-1)",
    ),
    (
        "language",
        lambda c: c.replace("language: c", "language: python"),
        "language: must be one of 'c', 'go' or 'rust' (got 'python')",
    ),
    (
        "repository",
        lambda c: c.replace("https://", "http://"),
        "repository: must be an https:// URL (got 'http://example.invalid/c-rle')",
    ),
    (
        "source",
        lambda c: c.replace("source: /src/c-rle", "source: src/c-rle"),
        "source: must be an absolute path such as /src/project (got 'src/c-rle')",
    ),
    (
        "absolute path",
        lambda c: c.replace("pocs/crash-1.bin,", "/etc/passwd,"),
        "files.poc.0: must be a relative path of plain names (got '/etc/passwd')",
    ),
    (
        "path out",
        lambda c: c.replace("pocs/crash-1.bin,", "../../../x,"),
        "files.poc.0: ../../../x leaves the task folder",
    ),
    (
        "link out",
        lambda c: c.replace("pocs/crash-1.bin,", "pocs/link,"),
        "files.poc.0: pocs/link leaves the task folder",
    ),
    (
        "missing file",
        lambda c: c.replace("pocs/crash-1.bin,", "pocs/nope.bin,"),
        "files.poc.0: pocs/nope.bin: no such file in SSE",
    ),
    (
        "our own file",
        lambda c: c.replace("pocs/crash-1.bin,", "fix.patch,"),
        "files.poc.0: fix.patch: the imported task keeps a file of its own there",
    ),
    (
        "no description",
        lambda c: c.replace(
            "  issue: |\n    `rle decode` writes past its output buffer on a crafted input.\n", ""
        ).replace("  crash_report:\n    - reports/crash-1.txt\n", "  {}\n"),
        "task_description: needs at least one of issue, crash_report, bug_description",
    ),
    (
        "PoCs without run.sh",
        lambda c: c.replace("  run: scripts/run.sh\n", ""),
        "files.poc: PoCs need scripts.run",
    ),
]


@pytest.mark.parametrize(("edit", "problem"), [(e, p) for _, e, p in UPSTREAM_EDITS],
                         ids=[name for name, _, _ in UPSTREAM_EDITS])  # fmt: skip
def test_a_bad_upstream_config_is_one_line(
    cli: Cli, tmp_path: Path, edit: Callable[[str], str], problem: str
) -> None:
    folder = benchsamples.upstream_task(tmp_path)
    (folder / "sse" / "pocs" / "link").symlink_to("/etc/passwd")
    config = folder / "sse" / "config.yaml"
    config.write_text(edit(config.read_text()))
    line = refused(cli, tmp_path / "out", "upstream", str(folder))
    expected = f"{config}: {problem}".replace("SSE", str((folder / "sse").resolve()))
    assert line.startswith(expected) if problem.endswith(": ") else line == expected


def test_a_folder_that_is_no_upstream_task_is_one_line(cli: Cli, tmp_path: Path) -> None:
    folder = benchsamples.upstream_task(tmp_path)
    out = tmp_path / "out"
    assert refused(cli, out, "upstream", str(tmp_path / "nope")) == (
        f"{tmp_path / 'nope'}: no such folder (an upstream task folder, or /ssebench)"
    )
    assert refused(cli, out, "upstream", str(tmp_path)) == (
        f"{tmp_path}: neither an upstream task folder (Dockerfile, sse/config.yaml) nor an "
        "image's /ssebench folder (config.yaml)"
    )
    (folder / "Dockerfile").unlink()
    assert refused(cli, out, "upstream", str(folder)) == (
        f"{folder}: an upstream task folder has a Dockerfile"
    )


def test_an_images_ssebench_folder_needs_its_image_named(cli: Cli, tmp_path: Path) -> None:
    sse = benchsamples.upstream_task(tmp_path) / "sse"
    scripts = sse / "scripts"
    scripts.mkdir()
    for name in ("build.sh", "run.sh", "test.sh"):
        (sse / name).rename(scripts / name)
    assert refused(cli, tmp_path / "out", "upstream", str(sse)) == (
        f"{sse / 'config.yaml'}: cannot tell the task's image from its folder: give --image"
    )
    assert refused(cli, tmp_path / "out", "upstream", str(sse), "--image=a b") == (
        "--image: must be a Docker image name, e.g. \"debian:12\" (got 'a b')"
    )
    code, out, err = cli("upstream", str(sse), "--image", "x/y:1", "--out", str(tmp_path / "o"))
    said = "ssebench: import upstream: 1 record: 1 task, 1 with a fix\n"
    assert (code, out, err) == (0, f"{tmp_path / 'o' / 'c-rle-1'}\n", said)


def test_a_task_that_is_there_already_is_one_line(cli: Cli, tmp_path: Path) -> None:
    folder = benchsamples.upstream_task(tmp_path)
    out = tmp_path / "out"
    (out / "c-rle-1").mkdir(parents=True)
    assert refused(cli, out, "upstream", str(folder)) == (
        f"{out / 'c-rle-1'} exists: import into another --out, or remove it"
    )


# --- SEC-bench and ARVO ---------------------------------------------------------------------

SECB_EDITS: list[tuple[str, Callable[[dict[str, object]], object], str]] = [
    ("unknown key", lambda i: {**i, "extra": 1}, "extra: unknown key"),
    ("missing key", lambda i: {k: v for k, v in i.items() if k != "patch"}, "patch: is required"),
    (
        "exit_code a string",
        lambda i: {**i, "exit_code": "2"},
        "exit_code: must be a whole number (got '2')",
    ),
    (
        "exit_code too big",
        lambda i: {**i, "exit_code": 300},
        "exit_code: must be at most 255 (got 300)",
    ),
    (
        "id not plain",
        lambda i: {**i, "instance_id": "../c-rle"},
        "instance_id: not a plain name (got '../c-rle')",
    ),
    (
        "id not an image's",
        lambda i: {**i, "instance_id": "C-rle.X"},
        "instance_id: not a plain name (got 'C-rle.X')",
    ),
    (
        "work_dir",
        lambda i: {**i, "work_dir": "src/c-rle"},
        "work_dir: must be an absolute path such as /src/project (got 'src/c-rle')",
    ),
    ("empty fix", lambda i: {**i, "patch": ""}, "patch: must not be empty"),
    ("not an object", lambda i: [i], "must be a mapping of keys (got list)"),
]


@pytest.mark.parametrize(("edit", "problem"), [(e, p) for _, e, p in SECB_EDITS],
                         ids=[name for name, _, _ in SECB_EDITS])  # fmt: skip
def test_a_bad_secb_instance_is_one_line_and_nothing_is_written(
    cli: Cli, tmp_path: Path, edit: Callable[[dict[str, object]], object], problem: str
) -> None:
    path, _ = benchsamples.secb_instance(tmp_path)
    good = json.loads(path.read_text())
    other = {**good, "instance_id": "c-rle.standin-2"}
    lines = [json.dumps(good), json.dumps(other), json.dumps(edit(other))]
    path.write_text("\n".join(lines) + "\n")
    assert refused(cli, tmp_path / "out", "secb", str(path)) == f"{path}:3: {problem}"


def test_a_secb_file_of_no_instances_is_one_line(cli: Cli, tmp_path: Path) -> None:
    path, _ = benchsamples.secb_instance(tmp_path)
    instance = path.read_text()
    out = tmp_path / "out"
    path.write_text(instance + instance)
    assert refused(cli, out, "secb", str(path)) == (
        f"{path}:2: instance_id: c-rle.standin-1 again (first at {path}:1): ids name folders"
    )
    path.write_text(instance + "{not json\n")
    assert refused(cli, out, "secb", str(path)).startswith(f"{path}:2: not JSON: ")
    path.write_text("\n")
    assert refused(cli, out, "secb", str(path)) == f"{path}: holds no record"
    assert refused(cli, out, "secb", str(tmp_path / "gone.json")) == (
        f"{tmp_path / 'gone.json'}: no such file"
    )
    assert refused(cli, out, "secb", str(path), "--source", str(tmp_path)) == (
        "--source is for `ssebench import upstream`"
    )
    assert refused(cli, out, "upstream", str(tmp_path), "--mode", "strict") == (
        "--mode is for `ssebench import secb`"
    )


def test_an_unwritable_out_is_one_line(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "out"  # a folder no one can make
    path, _ = benchsamples.arvo_metadata(tmp_path)
    code, stdout, stderr = cli("arvo", str(path), "--out", str(out))
    assert (code, stdout) == (2, "")
    assert stderr == f"ssebench: error: --out {out}: cannot write there: Not a directory\n"


OSS_FUZZ_HEAD = """\
readable = ["/src"]
writable = ["/out", "/work"]
# The image's build variables (a case's environment is an allow-list).
pass_env = [
    'SRC', 'OUT', 'WORK', 'CC', 'CXX', 'CCC', 'CFLAGS', 'CXXFLAGS', 'LDFLAGS', 'LIB_FUZZING_ENGINE',
    'SANITIZER', 'SANITIZER_FLAGS', 'FUZZING_ENGINE', 'FUZZING_LANGUAGE', 'ARCHITECTURE',
    'MSAN_LIBS_PATH', 'GOPATH', 'GOROOT', 'GOFLAGS', 'GOTOOLCHAIN', 'CGO_ENABLED', 'CARGO_HOME',
    'RUSTUP_HOME', 'RUSTUP_TOOLCHAIN', 'RUSTFLAGS',
]
"""
# Where only the task's image has the tree: the build files and test folders by name.
BY_NAME = """\
# What decides the build and the tests, as shipped (less what the reference fix changes):
# a graded patch cannot change it (docs/evaluating.md).
protected = [
    'BUILD', 'BUILD.bazel', 'CMakeLists.txt', 'CMakePresets.json', 'CMakeUserPresets.json',
    'Cargo.lock', 'Cargo.toml', 'GNUmakefile', 'MODULE.bazel', 'Makefile', 'Makefile.am',
    'Makefile.in', 'SConscript', 'SConstruct', 'Sconstruct', 'WORKSPACE', 'WORKSPACE.bazel',
    'aclocal.m4', 'build.gradle', 'build.gradle.kts', 'build.ninja', 'build.rs', 'configure',
    'configure.ac', 'configure.in', 'go.mod', 'go.sum', 'makefile', 'meson.build', 'meson.options',
    'meson_options.txt', 'package-lock.json', 'package.json', 'pnpm-lock.yaml', 'pom.xml',
    'pyproject.toml', 'sconstruct', 'settings.gradle', 'settings.gradle.kts', 'setup.cfg',
    'setup.py', 'yarn.lock', '*.mk', '*.cmake', '__tests__/', 'fuzz/', 'fuzzer/', 'fuzzers/',
    'fuzzing/', 'oss-fuzz/', 'spec/', 'specs/', 'test/', 'tests/', 'testsuite/',
]
"""
SECB_TOML = f"""\
# Imported by `ssebench import secb` (ssebench 0.1.0) from
# SOURCE: SEC-bench instance c-rle.standin-1.
# The source's own metadata is beside this file: secb.json.
source = '/src/c-rle'
image = 'hwiwonlee/secb.eval.x86_64.c-rle.standin-1:patch'
{BY_NAME}\
# OSS-Fuzz's compile reads the build script and what the image fetched under /src, and writes
# /out and /work.
{OSS_FUZZ_HEAD}
[checks.build]
run = 'secb build'

# SEC-bench's MODE mode (import secb --mode): the PoC no longer triggers when
# `secb repro` prints no sanitizer report, does not time out and exits with
# EXITS.
[checks.pocs]
files = ['/testcase']
run = 'secb repro'
timeout = 10

[checks.pocs.triggered_if]
sanitizer = true  # SEC-bench's six patterns among ssebench's (docs/tasks.md)
signal = false  # a signal is its status, 128+N, as SEC-bench reads it
timeout = true
exit_codes = [124, 137]  # SEC-bench's time-out
output_regex = '==\\d+==(ERROR|WARNING): \\w+Sanitizer:'  # a report's start
"""
# Each mode: what the comment says the run exits with, and the statuses it may pass with.
MODES = {
    "strict": ("0", "passing_exit_codes = [0]\n"),
    "medium": ("0 or the instance's exit_code (2)", "passing_exit_codes = [0, 2]\n"),
    "generous": ("any status, a signal's too", ""),
}


@pytest.mark.parametrize("mode", [None, "strict", "medium", "generous"])
def test_secb_writes_this_task_folder_in_each_mode(
    cli: Cli, tmp_path: Path, mode: str | None
) -> None:
    """task.toml whole, where it came from, the source's record beside it as read, the fix;
    the mode's rule in task.toml, medium when none is asked for (as SEC-bench's evaluator)."""
    instances, _ = benchsamples.secb_instance(tmp_path)
    out = tmp_path / "out"
    code, stdout, stderr = cli("secb", str(instances), "--out", str(out),
                               *(["--mode", mode] if mode else []))  # fmt: skip
    said = "ssebench: import secb: 1 record: 1 task, 1 with a fix\n"
    assert (code, stdout, stderr) == (0, f"{out / benchsamples.SECB_ID}\n", said)
    secb = out / benchsamples.SECB_ID
    assert sorted(p.name for p in secb.iterdir()) == ["fix.patch", "secb.json", "task.toml"]
    exits, passing = MODES[mode or "medium"]
    expected = SECB_TOML.replace("SOURCE", str(instances)).replace("MODE", mode or "medium")
    assert (secb / "task.toml").read_text() == expected.replace("EXITS", exits) + passing
    instance = json.loads(instances.read_text())
    assert json.loads((secb / "secb.json").read_text()) == instance
    assert (secb / "fix.patch").read_text() == instance["patch"]


def test_an_unknown_mode_is_one_line(cli: Cli, tmp_path: Path) -> None:
    instances, _ = benchsamples.secb_instance(tmp_path)
    out = tmp_path / "out"
    assert cli("secb", str(instances), "--out", str(out), "--mode", "lenient") == (
        2,
        "",
        "ssebench import: error: argument --mode: invalid choice: 'lenient' (choose from "
        "'medium', 'strict', 'generous')\n",
    )
    assert not out.exists()


# --- the table of formats ----------------------------------------------------------------------


def test_the_help_lists_each_format_from_the_table(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # argparse wraps at hyphens too
    code, out, err = cli("--help")
    assert (code, err) == (0, "")
    flat = " ".join(out.split())
    formats = "; ".join(f"{e.name}, {e.benchmark}" for e in FORMATS.values())
    sources = "; ".join(f"{e.name}: {e.source}" for e in FORMATS.values())
    assert f"FORMAT the source's benchmark: {formats} SOURCE what FORMAT reads: {sources} " in flat


def standin_reader(request: Request) -> Records:
    """A format of a test's own: each line of SOURCE names a task; `bad` is refused."""

    def items() -> Iterator[Imported | SourceError]:
        for number, name in enumerate(request.path.read_text().split(), 1):
            if name == "bad":
                yield SourceError(f"{request.path}:{number}", "name", "not a good name")
            else:
                yield Imported(
                    name, "source = '/src/x'\nimage = 'x:1'\n[checks.build]\nrun = 'true'\n"
                )

    return Records(items(), total=None, notes=(f"mode {request.mode}",))


def test_a_format_added_to_the_table_is_a_choice_read_by_its_own_reader(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing but its entry: the command takes it, refuses a flag it does not own, and reads
    it with its reader (an entry's flags are its own: --mode is secb's, and this one's)."""
    entry = Format("standin", "a test's own", f"{__name__}:standin_reader", "names", ("--mode",))
    monkeypatch.setitem(FORMATS, "standin", entry)
    source = tmp_path / "names.txt"
    source.write_text("one\nbad\ntwo\n")
    out = tmp_path / "out"
    assert refused(cli, out, "standin", str(source), "--image", "x:1") == (
        "--image is for `ssebench import upstream`"
    )
    assert cli("standin", str(source), "--out", str(out), "--keep-going", "--mode", "strict") == (
        1,
        f"{out / 'one'}\n{out / 'two'}\n",
        f"ssebench: error: {source}:2: name: not a good name\n"
        "ssebench: import standin: mode strict\n"
        "ssebench: import standin: 3 records: 2 tasks, 0 with a fix, 1 refused\n",
    )
