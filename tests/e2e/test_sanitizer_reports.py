"""A PoC's verdict depends on what its program does, never on a channel the patch controls: real
`gcc -fsanitize=...` programs, run by the real daemon and supervisor, unconfined and under each
mechanism this machine has (as root, a case user of their own), whose reports reach the judge
through the case's report folder (daemon/confine/reports.py) and its exit status N
(daemon/sanitizers.py), whatever the program does to its stderr, its options or the folder.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.core import CheckOutcome, Status
from ssebench.core.daemons.door import available
from ssebench.daemon.confine.policy import SHARED_TMP, inside
from ssebench.daemon.confine.user import case_user
from ssebench.daemon.guard import private_parent
from ssebench.daemon.sanitizers import EXIT_CODES
from ssebench.testing.kit import TaskHandle, make_task

from .test_confine import run_case

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc with AddressSanitizer"),
]

MECHANISMS = ["none", *available(case_user())]
HEADER = "#include <fcntl.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
HEADER += "#include <sys/stat.h>\n#include <unistd.h>\n"
OVERFLOW = 'char *copy = malloc(4); strcpy(copy, "overflowing"); puts(copy); free(copy);'
FIXED = OVERFLOW.replace("malloc(4)", "malloc(16)")
# The red team's three lines: stderr kept for the program, fd 2 (ASan's) sent to /dev/null.
DEVNULL = 'stderr = fdopen(dup(2), "w"); dup2(open("/dev/null", O_WRONLY), 2);'
REPORT = "ERROR: AddressSanitizer: heap-buffer-overflow"


def program(*body: str, before: str = "") -> str:
    return HEADER + before + "int main(int argc, char **argv) {\n" + "\n".join(body) + "\n}\n"


def task(
    tmp: Path, mechanism: str, source: str, *, flags: str = "-fsanitize=address", **more: object
) -> TaskHandle:
    checks = {"build": f"gcc {flags} -g -o prog prog.c", "pocs": ["./prog"], **more}
    return make_task(tmp, checks, files={"prog.c": source}, isolation=mechanism)  # type: ignore[arg-type]


def poc(handle: TaskHandle) -> tuple[CheckOutcome, str]:
    """Build, then the PoCs alone: their outcome and the last log."""
    assert handle.run_check("build").status is Status.PASSED
    outcome, logs = handle.run_check_with_logs("pocs")
    return outcome, logs[-1].decode(errors="replace")


def told(log: str) -> int:
    """The N the case's ASAN_OPTIONS said (the program printed them first)."""
    found = re.search(r"exitcode=(\d+)", log)
    assert found is not None, log
    return int(found[1])


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_program_that_sends_fd_2_to_dev_null_still_triggers(
    tmp_path: Path, mechanism: str
) -> None:
    outcome, log = poc(task(tmp_path, mechanism, program(DEVNULL, OVERFLOW)))
    assert outcome.status is Status.FAILED
    (crash,) = outcome.cases
    assert (crash.exit_code in EXIT_CODES, crash.signal) == (True, None)
    assert REPORT in log and "SUMMARY: AddressSanitizer: heap-buffer-overflow" in log


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_report_stands_after_what_the_program_wrote_before_it(
    tmp_path: Path, mechanism: str
) -> None:
    source = program('fputs("prog: decoding\\n", stderr); fflush(stderr);', OVERFLOW)
    outcome, log = poc(task(tmp_path, mechanism, source))
    assert outcome.status is Status.FAILED
    assert log.startswith("prog: decoding\n=================")
    assert REPORT in log


LEAK_OR_OVERFLOW = program(
    'void *lost = malloc(100); lost = NULL; printf("%s\\n", getenv("ASAN_OPTIONS"));',
    "fflush(stdout);",
    'if (argc > 1) { char *copy = malloc(4); strcpy(copy, "overflowing"); free(copy); }',
    "return 0;",
)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_tasks_own_options_are_kept_but_its_log_path(tmp_path: Path, mechanism: str) -> None:
    """detect_leaks=0 and exitcode=42 are the task's and stay; its log_path is replaced."""
    handle = task(tmp_path / "own", mechanism, LEAK_OR_OVERFLOW)
    own = 'ASAN_OPTIONS = "detect_leaks=0:exitcode=42:log_path=$SSE_SOURCE_DIR/own"'
    toml = handle.path / "task.toml"
    toml.write_text(
        toml.read_text().replace("\n[checks.build]", f"env = {{ {own} }}\n[checks.build]")
    )
    toml.write_text(
        toml.read_text().replace(
            'cases = ["./prog"]', 'cases = ["./prog", "./prog x; s=$?; ls own* 2>&1; exit $s"]'
        )
    )
    outcome, log = poc(handle)
    assert outcome.status is Status.FAILED
    leaks, crash = outcome.cases
    assert (leaks.passed, leaks.exit_code) == (True, 0)  # no leak report: detect_leaks=0 holds
    assert (crash.passed, crash.exit_code) == (False, 42)
    first = log.splitlines()[0]
    assert re.fullmatch(
        r"detect_leaks=0:exitcode=42:log_path=\S+/own:log_path=/\S+/reports/report", first
    )
    assert REPORT in log and "ls: cannot access 'own*': No such file or directory" in log
    # The control: without the task's options, the leak alone triggers, by its report and N.
    outcome, log = poc(task(tmp_path / "default", mechanism, LEAK_OR_OVERFLOW))
    (leaks,) = outcome.cases
    assert (leaks.passed, leaks.exit_code) == (False, told(log))
    assert "ERROR: LeakSanitizer: detected memory leaks" in log


# Where ASAN_OPTIONS says the reports go, as a program of the agent's finds it.
FOLDER = """static char folder[4096], name[4200];
static void find_folder(void) {
    snprintf(folder, sizeof folder, "%s", strstr(getenv("ASAN_OPTIONS"), "log_path=") + 9);
    folder[strcspn(folder, ":")] = 0;
    *strrchr(folder, '/') = 0;
}
"""
ATTACKER = program(
    'printf("%s\\n", getenv("ASAN_OPTIONS")); fflush(stdout); find_folder();',
    "pid_t parent = getpid();",
    "if (fork() == 0) {",
    "    setsid();",
    "    for (;;) {",
    "        for (pid_t pid = parent - 3; pid <= parent + 3; pid++) {",
    '            snprintf(name, sizeof name, "%s/report.%d", folder, pid);',
    "            int fd = open(name, O_WRONLY);",
    '            if (fd >= 0) { write(fd, "nothing to see\\n", 15); ftruncate(fd, 0); close(fd); }',
    '            truncate(name, 0); rename(name, "/tmp/moved"); unlink(name);',
    "        }",
    "        DIR *listed = opendir(folder);  /* refused where the case's user is not ours */",
    "        for (struct dirent *e; listed && (e = readdir(listed));) {",
    '            snprintf(name, sizeof name, "%s/%s", folder, e->d_name); truncate(name, 0);',
    "            unlink(name);",
    "        }",
    "        if (listed) closedir(listed);",
    '        rename(folder, "/tmp/reports-moved"); rmdir(folder);',
    "    }",
    "}",
    "usleep(200000);",
    DEVNULL,
    OVERFLOW,
    before="#include <dirent.h>\n" + FOLDER,
)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_program_that_erases_its_reports_still_triggers(tmp_path: Path, mechanism: str) -> None:
    """It reads where its reports go and has a child of its own, in a session of its own, erase,
    truncate, overwrite and move them while it crashes: its status N stands."""
    outcome, log = poc(task(tmp_path, mechanism, ATTACKER))
    assert outcome.status is Status.FAILED
    (crash,) = outcome.cases
    assert (crash.exit_code, crash.signal) == (told(log), None)


QUIET = 'const char *__asan_default_options(void) { return "log_path=/tmp/x:exitcode=0"; }\n'


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_the_programs_own_default_options_give_way(tmp_path: Path, mechanism: str) -> None:
    outcome, log = poc(task(tmp_path, mechanism, program(OVERFLOW, before=QUIET)))
    assert outcome.status is Status.FAILED
    (crash,) = outcome.cases
    assert crash.exit_code in EXIT_CODES
    assert REPORT in log


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_an_honest_fix_passes_and_its_checks_are_unaffected(tmp_path: Path, mechanism: str) -> None:
    handle = task(
        tmp_path, mechanism, program(DEVNULL, FIXED), functional="./prog | grep -qx overflowing"
    )
    outcome = handle.outcome(None)
    assert [(o.check.key, o.status) for o in outcome.outcomes] == [
        ("build", Status.PASSED),
        ("pocs", Status.PASSED),
        ("intent", Status.PASSED),
        ("functional", Status.PASSED),
    ]
    assert handle.case_logs("pocs") == [b"overflowing\n"]


SIGNED = 'int big = 2147483647; big += argc; printf("%d\\n", big); return 0;'


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_non_fatal_ubsan_report_reaches_the_log_and_triggers(
    tmp_path: Path, mechanism: str
) -> None:
    handle = task(tmp_path, mechanism, program(DEVNULL, SIGNED), flags="-fsanitize=undefined")
    outcome, log = poc(handle)
    assert outcome.status is Status.FAILED
    (run,) = outcome.cases
    assert (run.exit_code, run.signal) == (0, None)  # it went on: only its report tells
    assert log.startswith("-2147483648\n") or "-2147483648\n" in log
    assert re.search(r"prog\.c:\d+:\d+: runtime error: signed integer overflow", log)


PLANTER = program(
    "find_folder();",
    'snprintf(name, sizeof name, "%s/report.link", folder);',
    'printf("symlink: %s\\n", symlink(argv[1], name) == 0 ? "made" : "refused");',
    'snprintf(name, sizeof name, "%s/report.fifo", folder);',
    'printf("fifo: %s\\n", mkfifo(name, 0666) == 0 ? "made" : "refused");',
    'snprintf(name, sizeof name, "%s/report.hard", folder);',
    'if (getuid() != 0) printf("hard link: %s\\n", link(argv[1], name) == 0 ? "made" : "refused");',
    "fflush(stdout); usleep(200000);",
    OVERFLOW,
    before=FOLDER,
)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_what_a_case_plants_in_the_report_folder_is_ignored(
    tmp_path: Path, mechanism: str, private: str
) -> None:
    """A symbolic link and a hard link to a root-only file, and a FIFO: none is read (the link
    would copy the file into a log the agent reads; the FIFO would hang a reader), each said;
    where Landlock's rights hold, none can be made."""
    secret = tmp_path / "root-only"
    secret.write_text("MARKER-not-for-the-agent\n")
    secret.chmod(0o600)
    handle = task(tmp_path / "task", mechanism, PLANTER)
    toml = handle.path / "task.toml"
    toml.write_text(toml.read_text().replace('"./prog"', f'"./prog {secret}"'))
    outcome, log = poc(handle)
    assert outcome.status is Status.FAILED
    assert REPORT in log and "MARKER" not in log
    planted = [line for line in log.splitlines() if line.startswith(("symlink", "fifo", "hard"))]
    notes = [line for line in log.splitlines() if line.startswith("[ssebench")]
    if landlock_guards(mechanism):  # it may make regular files there, nothing else
        assert planted == ["symlink: refused", "fifo: refused", "hard link: refused"]
        assert notes == []
        return
    assert planted == [
        "symlink: made",
        "fifo: made",
        *(["hard link: refused"] if mechanism != "none" else []),
    ]
    holds = "[ssebench: the sanitizer report folder holds"
    assert notes == [
        f"{holds} 'report.link': it is a symbolic link: it was not read]",
        f"{holds} 'report.fifo': it is a FIFO: it was not read]",
    ]


def landlock_guards(mechanism: str) -> bool:
    """Whether Landlock's rights on the report folder hold: not where the daemon's folders lie
    under /tmp, which Landlock grants a case user whole (rights given to a folder hold under
    it), so that only the case user's permissions stand there (the folder is ours, 1733)."""
    return mechanism == "landlock" and not inside(str(private_parent()), SHARED_TMP)


RIGHTS = """d=${ASAN_OPTIONS#*log_path=}; d=${d%%:*}; d=${d%/*}
try() { if eval "$2" 2>/dev/null; then echo "$1: yes"; else echo "$1: no"; fi; }
try make 'echo report >"$d/a"'
try write 'echo more >>"$d/a"'
try truncate 'truncate -s 0 "$d/a"'
echo x >"$d/r"; try remove 'rm "$d/r"'
echo x >"$d/n"; try rename 'mv "$d/n" "$d/m"'
try symlink 'ln -s /etc/passwd "$d/l"'
try fifo 'mkfifo "$d/f"'
try folder 'mkdir "$d/s"'
try list 'ls "$d" >/dev/null'
try 'move the folder' 'mv "$d" "$d.x"'
echo kept >"$d/k"
"""


@pytest.fixture(params=["tmp", "own"])
def private(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Where the daemon's folders lie: under /tmp (the default), or in a folder of their own."""
    if request.param == "tmp":
        yield "tmp"
        return
    folder = Path("/var/lib") / f"ssebench-test-{uuid.uuid4().hex[:8]}"
    folder.mkdir(mode=0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    try:
        yield "own"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("mechanism", [m for m in MECHANISMS if m != "none"])
def test_what_a_case_may_do_in_its_report_folder(
    tmp_path: Path, mechanism: str, private: str
) -> None:
    """Make files and write them, always; never list the folder nor move it. Under Landlock,
    where its rights hold, nothing more; else the case user's own permissions (its files are
    its own) are all that stands there, and the supervisor's copy and N must do."""
    handle = make_task(tmp_path, {"pocs": [RIGHTS]}, isolation=mechanism)
    _, logs = handle.run_check_with_logs("pocs")
    said = [line for line in logs[0].decode().splitlines() if line.endswith((": yes", ": no"))]
    more = "no" if landlock_guards(mechanism) else "yes"
    assert (private == "own") == (tempfile.gettempdir().startswith("/var/lib/"))
    assert said == [
        "make: yes",
        "write: yes",
        f"truncate: {more}",
        f"remove: {more}",
        f"rename: {more}",
        f"symlink: {more}",
        f"fifo: {more}",
        f"folder: {more}",
        "list: no",
        "move the folder: no",
    ]
    assert "\nkept\n" in logs[0].decode()  # what it wrote there was copied


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_report_bytes_count_toward_the_log_limit(tmp_path: Path, mechanism: str) -> None:
    """A report is output like any other: the log holds 1000 bytes of either, no more."""
    writes = 'd=${ASAN_OPTIONS#*log_path=}; echo start; yes | head -c 5000 >"${d%%:*}.1"; echo end'
    end, log, _ = run_case(tmp_path, mechanism, writes, log_limit=1000)
    note = (
        "\n[ssebench: this case printed more than its log's limit of 1000 bytes; the 4010 "
        "bytes after it were dropped]\n"
    )
    assert (end.exit_code, end.dropped) == (0, 4010)
    assert log.endswith(note) and len(log) == 1000 + len(note)
    assert log.startswith("start\n") and set(log[: -len(note)]) <= set("start\nendy")
