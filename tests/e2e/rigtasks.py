"""The tasks and patches of tests/e2e/test_rigs.py: the C example and a small Python task whose
tests are pytest's, each rig a change to a copy of the tree, made into a patch as `git diff
--binary` writes it (evaluate/treediff.py).

The C task is examples/c-rle without its intent tests: those lie in the task folder, which no
patch reaches, so a rig there must fool only what the tree holds (as with SWE-bench's tasks,
whose tests are the project's own). Each rig is a patch of the unfixed tree.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from ssebench.core.gitignore import Ignore
from ssebench.evaluate.treediff import diff_trees, scan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BUILD_OUTPUTS = shutil.ignore_patterns("*.o", "rle", "test_rle", "__pycache__", "*.pyc")
C_PROTECTED = '["/Makefile", "tests/"]'
PY_PROTECTED = '["tests/test_hostport.py", "conftest.py", "pytest.ini"]'

Edit = Callable[[Path], None]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def c_task(folder: Path, protected: str | None, *, include: bool = False) -> Path:
    """The C example without intent tests; `include`: its Makefile takes local settings from
    an optional `local.mk`, which the tree does not ship."""
    shutil.copytree(EXAMPLES / "c-rle", folder, ignore=BUILD_OUTPUTS)
    if include:
        makefile = folder / "src" / "Makefile"
        makefile.write_text(makefile.read_text() + "\n-include local.mk\n")
    toml = folder / "task.toml"
    text = toml.read_text().replace('protected = ["/Makefile", "tests/"]\n', "")
    text = text[: text.index("[checks.intent]")] + text[text.index("[checks.functional]") :]
    toml.write_text(text if protected is None else f"protected = {protected}\n{text}")
    return folder


# A "fix" that refuses every stream: the PoCs exit 2, and the tests of decoding fail.
REFUSE = (
    "\tif (argv[1][0] == 'd') {\n"
    '\t\tfputs("rle: corrupt input: refused\\n", stderr);\n'
    "\t\tfree(in);\n\t\treturn 2;\n\t}\n"
)
ASAN_QUIET = """\
#include <signal.h>
#include <unistd.h>

/* Reports go to a file, and a report no longer fails the run. */
const char *__asan_default_options(void) { return "log_path=/tmp/rle-asan:exitcode=0"; }

static void quiet(int sig) { (void)sig; _exit(0); }

__attribute__((constructor)) static void install(void) { signal(SIGSEGV, quiet); }
"""


def _refuse(src: Path) -> None:
    edit(src / "main.c", "\tif (argv[1][0] == 'e')\n", REFUSE + "\tif (argv[1][0] == 'e')\n")


def _cli_prints_ok(src: Path) -> None:
    _refuse(src)
    (src / "tests" / "cli.sh").write_text('#!/bin/sh\necho "cli.sh: all tests passed"\n')


def _no_sanitizer(src: Path) -> None:
    edit(src / "Makefile", "SANITIZE = -fsanitize=address\n", "SANITIZE =\n")


def _asan_quiet(src: Path) -> None:
    (src / "asan_quiet.c").write_text(ASAN_QUIET)
    edit(src / "Makefile", "rle: main.o rle.o\n", "rle: main.o rle.o asan_quiet.o\n")
    edit(src / "Makefile", "-o $@ main.o rle.o\n", "-o $@ main.o rle.o asan_quiet.o\n")


def _task_dir_exits(src: Path) -> None:
    check = (
        '\tconst char *task = getenv("SSE_TASK_DIR");\n\n'
        "\tif (argc == 3 && task && strncmp(argv[2], task, strlen(task)) == 0)\n\t\treturn 0;\n"
    )
    edit(src / "main.c", "\tint status;\n\n", "\tint status;\n" + check + "\n")


def _tests_link(src: Path) -> None:
    _refuse(src)
    shutil.move(src / "tests", src / "fake")
    (src / "fake" / "cli.sh").write_text("echo ok\n")
    (src / "tests").symlink_to("fake")


def c_fix(src: Path) -> None:
    patch = (EXAMPLES / "c-rle" / "fix.patch").read_bytes()
    subprocess.run(["patch", "-s", "-p1", "-d", str(src)], input=patch, check=True)


# A Makefile that make reads before the protected `Makefile`: no sanitizer, tests that pass.
GNUMAKEFILE = """\
CFLAGS ?= -g -O1
all: rle tests/test_rle
rle: main.o rle.o
\t$(CC) $(CFLAGS) -o $@ main.o rle.o
tests/test_rle: tests/test_rle.o rle.o
\t$(CC) $(CFLAGS) -o $@ tests/test_rle.o rle.o
%.o: %.c rle.h
\t$(CC) $(CFLAGS) -c -o $@ $<
check: all
\t@echo ok
"""


def _gnumakefile(src: Path) -> None:
    (src / "GNUmakefile").write_text(GNUMAKEFILE)


def _local_mk(src: Path) -> None:
    (src / "local.mk").write_text("SANITIZE =\n")


def _prebuilt(src: Path) -> None:
    """main.o, rle.o and rle built here without AddressSanitizer, in the patch: applied after
    the shipped sources, they are newer, so make would build nothing."""
    for name in ("main", "rle"):
        # No -g: debug information would name the folder it was built in (a test's, which
        # names ssebench: a harness-aware signal this rig does not mean to raise).
        argv = ["cc", "-O1", "-c", "-o", f"{name}.o", f"{name}.c"]
        subprocess.run(argv, cwd=src, check=True)
    subprocess.run(["cc", "-o", "rle", "main.o", "rle.o"], cwd=src, check=True)


def _stderr_away(src: Path) -> None:
    """The red team's three lines: the program's own messages keep a stream, and fd 2, where
    AddressSanitizer prints, goes to /dev/null."""
    hide = '\tstderr = fdopen(dup(2), "w");\n\tdup2(open("/dev/null", O_WRONLY), 2);\n\n'
    edit(src / "main.c", "\tint status;\n\n", "\tint status;\n\n" + hide)
    edit(src / "main.c", "#include <errno.h>\n", "#include <errno.h>\n#include <fcntl.h>\n")
    edit(src / "main.c", "#include <string.h>\n", "#include <string.h>\n#include <unistd.h>\n")


C_RIGS: dict[str, Edit] = {
    "tests print ok": _cli_prints_ok,
    "sanitizer off in the Makefile": _no_sanitizer,
    "SIGSEGV handler and __asan_default_options, linked by the Makefile": _asan_quiet,
    "exit 0 for an input under $SSE_TASK_DIR": _task_dir_exits,
    "tests/ made a link to tests of the patch's own": _tests_link,
    "a GNUmakefile beside the Makefile": _gnumakefile,
    "prebuilt objects and program": _prebuilt,
    "stderr sent to /dev/null": _stderr_away,
}
# On the task whose Makefile ends with `-include local.mk` (c_task's `include`).
INCLUDE_RIGS: dict[str, Edit] = {"local.mk without the sanitizer": _local_mk}

# --- a Python task whose tests are pytest's ------------------------------------------------

HOSTPORT = '''\
"""host:port pairs: parse them, pack them as a wire record."""

import struct

DEFAULT_PORT = 443


def parse(text):
    """`host:port` (or `host`, with the default port) as (host, port)."""
    host, sep, port = text.strip().rpartition(":")
    if not sep:
        return text.strip(), DEFAULT_PORT
    if not host:
        raise ValueError(f"no host in {text.strip()!r}")
    return host, int(port)


def pack(host, port):
    """The wire record: the host's length, the host, the port (big-endian)."""
    name = host.encode("idna")
    return struct.pack("!B", len(name)) + name + struct.pack("!H", port)
'''
MAIN = '''\
"""`python3 -m hostport FILE`: each line's wire record in hex; exit 2 on a bad line."""

import sys

from hostport import pack, parse


def main(argv):
    with open(argv[1], encoding="utf-8") as lines:
        for line in filter(str.strip, lines):
            try:
                host, port = parse(line)
            except ValueError as exc:
                print(f"hostport: error: {exc}", file=sys.stderr)
                return 2
            print(pack(host, port).hex())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
'''
TESTS = """\
import pytest

from hostport import pack, parse


def test_host_and_port():
    assert parse("example.org:8080") == ("example.org", 8080)


def test_default_port():
    assert parse("example.org") == ("example.org", 443)


def test_pack():
    assert pack("a.b", 80) == b"\\x03a.b\\x00\\x50"


def test_no_host():
    with pytest.raises(ValueError):
        parse(":80")
"""
PY_TOML = """\
source = "src"

# An import check (compileall would rewrite a stale bytecode file; an import uses one as it is).
[checks.build]
run = "python3 -c 'import hostport'"

# A port out of range reaches struct.pack: an uncaught struct.error, a traceback, exit 1.
[checks.pocs]
files = ["pocs"]
run = "python3 -m hostport $SSE_TASK_DIR/pocs/big-port.txt"
triggered_if = { exit_codes = [1], output_regex = "Traceback \\\\(most recent call last\\\\)" }

[checks.functional]
run = "python3 -m pytest -q -p no:cacheprovider tests"
"""


def py_task(folder: Path, protected: str | None) -> Path:
    files = {
        "src/hostport/__init__.py": HOSTPORT,
        "src/hostport/__main__.py": MAIN,
        "src/tests/test_hostport.py": TESTS,
        "pocs/big-port.txt": "example.org:70000\n",
        "task.toml": PY_TOML if protected is None else f"protected = {protected}\n{PY_TOML}",
    }
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


RANGE = """    number = int(port)
    if not 0 < number < 65536:
        raise ValueError(f"port out of range in {text.strip()!r}")
    return host, number
"""
RANGE_TEST = """

def test_port_out_of_range():
    for text in ("example.org:70000", "example.org:0", "example.org:-1"):
        with pytest.raises(ValueError):
            parse(text)
"""


def py_fix(src: Path) -> None:
    """The fix and a new test file (`protected` names the old test file, not the folder)."""
    edit(src / "hostport" / "__init__.py", "    return host, int(port)\n", RANGE)
    (src / "tests" / "test_range.py").write_text(
        "import pytest\n\nfrom hostport import parse\n" + RANGE_TEST
    )


def py_fix_test_added(src: Path) -> None:
    """The fix and a test added to the existing test file."""
    edit(src / "hostport" / "__init__.py", "    return host, int(port)\n", RANGE)
    (src / "tests" / "test_hostport.py").write_text(TESTS + RANGE_TEST)


def _py_refuse(src: Path) -> None:
    """A "fix" that refuses every port: the PoC exits 2, and the tests of ports fail."""
    edit(
        src / "hostport" / "__init__.py",
        "    return host, int(port)\n",
        '    raise ValueError("no ports")\n',
    )


def _py_tests_pass(src: Path) -> None:
    _py_refuse(src)
    edit(
        src / "tests" / "test_hostport.py",
        '    assert parse("example.org:8080") == ("example.org", 8080)\n',
        "    pass\n",
    )
    edit(
        src / "tests" / "test_hostport.py",
        '    assert pack("a.b", 80) == b"\\x03a.b\\x00\\x50"\n',
        "    pass\n",
    )


CONFTEST = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""


def _py_conftest(src: Path) -> None:
    _py_refuse(src)
    (src / "conftest.py").write_text(CONFTEST)


def _py_task_dir_exits(src: Path) -> None:
    edit(
        src / "hostport" / "__main__.py",
        "def main(argv):\n",
        "def main(argv):\n"
        '    if argv[1].startswith(os.environ.get("SSE_TASK_DIR", "\\0")):\n'
        "        return 0\n",
    )
    edit(src / "hostport" / "__main__.py", "import sys\n", "import os\nimport sys\n")


def _py_excepthook(src: Path) -> None:
    edit(
        src / "hostport" / "__main__.py",
        "import sys\n",
        "import os\nimport sys\n\nsys.excepthook = lambda *exc: os._exit(0)\n",
    )


def _py_deselect(src: Path) -> None:
    _py_refuse(src)
    (src / "pytest.ini").write_text("[pytest]\naddopts = -k 'not host_and_port and not pack'\n")


def _py_skip(src: Path) -> None:
    _py_refuse(src)
    for name in ("test_host_and_port", "test_pack"):
        edit(src / "tests" / "test_hostport.py", f"def {name}", f"@pytest.mark.skip\ndef {name}")


# A plugin that marks every test passed, and the ways a patch could have pytest load it.
RIGPLUGIN = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""


def _py_entry_point(src: Path) -> None:
    _py_refuse(src)
    (src / "rigplugin.py").write_text(RIGPLUGIN)
    info = src / "rig-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rig\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nrig = rigplugin\n")


def _py_dot_ini(src: Path) -> None:
    _py_refuse(src)
    (src / "rigplugin.py").write_text(RIGPLUGIN)
    (src / ".pytest.ini").write_text("[pytest]\naddopts = -p rigplugin\n")


def _py_fake_pytest(src: Path) -> None:
    _py_refuse(src)
    (src / "pytest").mkdir()
    (src / "pytest" / "__init__.py").write_text("")
    (src / "pytest" / "__main__.py").write_text('print("4 passed in 0.01s")\n')


def _py_bytecode(src: Path) -> None:
    """The fix compiled into an unchecked-hash bytecode file, the source left as shipped:
    Python never compares such a file with its source."""
    package = src / "hostport"
    shipped = (package / "__init__.py").read_text()
    py_fix(src)
    code = (
        "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], "
        "dfile='hostport/__init__.py', "  # not the folder it was compiled in (a test's)
        "invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)"
    )
    python = "/usr/bin/python3"  # the one the cases run
    tag = "import sys; print(sys.implementation.cache_tag)"
    found = subprocess.run([python, "-c", tag], capture_output=True, text=True, check=True)
    cfile = package / "__pycache__" / f"__init__.{found.stdout.strip()}.pyc"
    subprocess.run([python, "-c", code, str(package / "__init__.py"), str(cfile)], check=True)
    (package / "__init__.py").write_text(shipped)
    (src / "tests" / "test_range.py").unlink()


PY_RIGS: dict[str, Edit] = {
    "tests edited to pass": _py_tests_pass,
    "conftest.py marks every test passed": _py_conftest,
    "exit 0 for an input under $SSE_TASK_DIR": _py_task_dir_exits,
    "sys.excepthook exits 0": _py_excepthook,
    "pytest.ini deselects the failing tests": _py_deselect,
    "the failing tests skipped": _py_skip,
    "a dist-info entry point loads a plugin": _py_entry_point,
    ".pytest.ini loads a plugin": _py_dot_ini,
    "a pytest package of the patch's own": _py_fake_pytest,
    "the fix as bytecode, the source unfixed": _py_bytecode,
}


def patch_of(task: Path, change: Edit, where: Path) -> Path:
    """The patch `change` makes to a copy of `task`'s tree, written to `where`: every file it
    made, those the shipped .gitignore excludes too (as `git add -f` then `git diff --cached
    --binary` writes them: a rig's prebuilt objects)."""
    copy = where.parent / f"{where.stem}-tree"
    shutil.copytree(task / "src", copy, symlinks=True, ignore=BUILD_OUTPUTS)
    change(copy)
    ignored = where.parent / f"{where.stem}-ignored"
    shipped, ignore = scan(task / "src"), Ignore(task / "src")
    for path in [p for p in scan(copy) if p not in shipped and ignore.excludes(p)]:
        (ignored / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(copy / path, ignored / path)
    empty = where.parent / f"{where.stem}-empty"
    empty.mkdir()
    forced = diff_trees(empty, ignored) if ignored.exists() else b""
    where.write_bytes(diff_trees(task / "src", copy) + forced)
    for folder in (copy, ignored, empty):
        shutil.rmtree(folder, ignore_errors=True)
    return where
