"""The `protected` list an imported task gets (evaluate/importers/protection.py): what decides the
build and the tests, as shipped, and never a path the reference fix changes."""

from __future__ import annotations

from pathlib import Path

from ssebench.core.toolfiles import known_name
from ssebench.evaluate.importers.protection import protected_globs

FIX = b"""\
diff --git a/src/parse.c b/src/parse.c
--- a/src/parse.c
+++ b/src/parse.c
@@ -1 +1 @@
-int parse(void) { return 0; }
+int parse(void) { return 1; }
diff --git a/src/Makefile.am b/src/Makefile.am
--- a/src/Makefile.am
+++ b/src/Makefile.am
@@ -1 +1,2 @@
 bin_PROGRAMS = parse
+parse_SOURCES = parse.c
diff --git a/tests/unit/test_parse.c b/tests/unit/test_parse.c
new file mode 100644
--- /dev/null
+++ b/tests/unit/test_parse.c
@@ -0,0 +1 @@
+int main(void) { return 0; }
"""


def tree(root: Path, names: list[str]) -> Path:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n")
    return root


def test_where_the_tree_is_here_its_own_build_files_and_test_folders(tmp_path: Path) -> None:
    source = tree(tmp_path / "src", [
        "Makefile.am", "configure.ac", "src/Makefile.am", "src/parse.c", "m4/ax.m4",
        "cmake/warnings.cmake", "tests/unit/test_lex.c", "tests/unit/data/a.txt",
        "tests/run.sh", "fuzz/fuzz_parse.c", "fuzz/Makefile", "docs/spec/index.md",
        "vendor/lib/CMakeLists.txt", ".git/config",
    ])  # fmt: skip
    assert protected_globs(source, FIX) == [
        "/Makefile.am", "/cmake/warnings.cmake", "/configure.ac", "/docs/spec/", "/fuzz/",
        "/tests/run.sh", "/tests/unit/data/a.txt", "/tests/unit/test_lex.c",
        "/vendor/lib/CMakeLists.txt",
    ]  # fmt: skip


def test_where_only_the_image_has_the_tree_by_name_less_the_fix(tmp_path: Path) -> None:
    globs = protected_globs(None, FIX)
    assert "Makefile.am" in globs and globs[-1] == "!/src/Makefile.am"
    assert "fuzz/" in globs and "tests/" not in globs and "unit/" not in globs
    assert protected_globs(None, None)[-3:] == ["test/", "tests/", "testsuite/"]


def test_names_the_tables_know_are_no_typos() -> None:
    assert [known_name(g) for g in ("Makefile", "tests/", "*.mk", "!/src/Makefile.am")] == [
        True, True, True, False,
    ]  # fmt: skip
    assert not known_name("Makefle") and not known_name("/Makefile")


def test_a_go_or_rust_fix_that_changes_its_modules_stays_whole(tmp_path: Path) -> None:
    """A Go fix that bumps a dependency (go.mod, go.sum), a Rust one that updates Cargo.lock:
    the files it changes are the agent's, the others still protected."""
    fix = b"".join(
        b"--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-x\n+y\n" % (name, name)
        for name in (b"go.mod", b"go.sum", b"Cargo.lock", b"vendor/modules.txt")
    )
    source = tree(tmp_path / "src", [
        "go.mod", "go.sum", "main.go", "vendor/modules.txt", "Cargo.toml", "Cargo.lock",
        "build.rs", "src/lib.rs", "tests/it.rs",
    ])  # fmt: skip
    assert protected_globs(source, fix) == ["/Cargo.toml", "/build.rs", "/tests/"]
    assert protected_globs(source, None) == [
        "/Cargo.lock", "/Cargo.toml", "/build.rs", "/go.mod", "/go.sum", "/tests/",
    ]  # fmt: skip
    assert protected_globs(None, fix)[-3:] == ["!/Cargo.lock", "!/go.mod", "!/go.sum"]
