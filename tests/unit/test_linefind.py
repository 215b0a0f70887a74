"""A rule's hint never hides a line the rule finds (evaluate/linefind.py): every line that each
rule of evaluate/signalrules.py finds holds one of its hint's words, and `first` gives the first
such line in the file's order, as a look at every line would."""

from __future__ import annotations

import pytest

from ssebench.core.patchparse import Line
from ssebench.evaluate.linefind import AddedLines, Hint
from ssebench.evaluate.signalrules import (
    HANDLER_HINT,
    HARNESS,
    HARNESS_HINT,
    SANITIZER_HINT,
    STDERR_HINT,
    redirects_stderr,
    sanitizer_line,
    signal_handler,
)

# Lines each rule finds: every alternative of every pattern, and near misses it must not.
LINES = [
    "CFLAGS += -fno-sanitize=address", "CFLAGS += -fsanitize-ignorelist=ign.txt",
    "export ASAN_OPTIONS=detect_leaks=0", "const char *__ubsan_default_options(void) {",
    "__asan_set_error_report_callback(cb);", "__sanitizer_set_report_path(\"/x\");",
    "void __asan_on_error(void) {}", "__attribute__((no_sanitize(\"address\")))",
    "NO_SANITIZE_ADDRESS int f(void);", "__no_sanitize_address__ int g(void);",
    "CPPFLAGS = -DNDEBUG", "overflow-checks = false", "debug-assertions = false",
    "signal(SIGSEGV, on_segv);", "sigaction(SIGABRT, &act, NULL);", "trap 'exit 0' 11",
    "trap '' SEGV", "void abort(void) { _exit(0); }", "void __assert_fail(const char *a,",
    "void __stack_chk_fail(void) {", "void __asan_report_load1(void *p) {",
    "sys.excepthook = lambda *a: None", "threading.excepthook = hook",
    "signal.signal(signal.SIGFPE, handler)", "signal.Notify(c, syscall.SIGBUS)",
    "dup2(open(\"/dev/null\", O_WRONLY), 2);", "dup3(fd, STDERR_FILENO, 0);",
    "freopen(\"/dev/null\", \"w\", stderr);", "close(2);", "fclose(stderr);",
    "stderr = fdopen(dup(2), \"w\");", "sys.stderr = open(os.devnull, 'w')",
    "sys.__stderr__ = None", "with contextlib.redirect_stderr(io.StringIO()):",
    "os.dup2(null, 2)", "os.close(2)", "os.Stderr = devnull", "syscall.Dup2(fd, 2)",
    "unix.Dup3(fd, 2, 0)", "exec 2>/dev/null", "  exec >log 2>&1",
    "if (getenv(\"SSE_TASK_DIR\"))", "# tuned for SSEBench", "cat $MCP_LOG_DIR/x",
    "user sse-runner", "fprintf(stderr, \"usage\\n\");", "FILE *err = stderr;",
    "close_file(f);", "int sig = SIGINT;", "x = trap_count;",
]  # fmt: skip
RULES = [
    (SANITIZER_HINT, sanitizer_line),
    (HANDLER_HINT, signal_handler),
    (STDERR_HINT, redirects_stderr),
    (HARNESS_HINT, lambda text: (found := HARNESS.search(text)) and found[0]),
]


def holds(hint: Hint, text: str) -> bool:
    return any(w in text for w in hint.words) or any(w in text.lower() for w in hint.folded)


@pytest.mark.parametrize(("hint", "rule"), RULES, ids=["sanitizer", "handler", "stderr", "harness"])
def test_every_line_a_rule_finds_holds_a_word_of_its_hint(hint, rule) -> None:  # type: ignore[no-untyped-def]
    found = [line for line in LINES if rule(line) is not None]
    assert found  # each rule finds some of them
    assert [line for line in found if not holds(hint, line)] == []


def test_first_is_the_first_line_the_rule_finds_in_the_files_order() -> None:
    texts = ["int ok;", "close_file(f); /* SIGINT */", "x = 1; dup2(a, 2); close(2);",
             "close(2);", "exec 2>/dev/null"]  # fmt: skip
    added = AddedLines([Line("+", text, n) for n, text in enumerate(texts, 1)])
    assert added.first(STDERR_HINT, redirects_stderr) == (Line("+", texts[2], 3), "")
    assert added.first(HANDLER_HINT, signal_handler) is None
    assert added.first(Hint(), redirects_stderr) is None
    assert AddedLines([]).first(STDERR_HINT, redirects_stderr) is None
