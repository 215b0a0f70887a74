"""What decides a check besides the code under test: the files build tools and test runners read
by themselves, and build outputs known by their bytes.

A patch is the agent's code, and on a task with PoCs alone its verdict must come from what the
patched program does, never from a channel the patch controls (docs/evaluating.md, "A patch
changes source, not its tools"). Three rules come from here, each a table:
- a protected build file protects every name its tool reads in its place and what it includes
  (make reads `GNUmakefile` before a protected `Makefile`), and beside it no new build file of
  any tool may appear;
- start-up hooks and tool configuration that a runner loads by itself (`sitecustomize.py`,
  `*.dist-info/` entry points, `.pytest.ini`, `node_modules/`, `go.work`, `.cargo/config`) and
  modules named like the test runners are never added by a patch;
- build outputs (ELF, `ar`, Python bytecode, ...) come from the build, never from a patch.
The grade (daemon/protect.py) and the runner copy (daemon/runnercopy.py) apply them alike, so
test_patch sees what grading will; the signals (evaluate/signals.py) name them for a reviewer.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ssebench.core.gitignore import Ignore


@dataclass(frozen=True)
class BuildTool:
    """A build tool: the file names it reads in one folder, in its order of preference, and how
    a build file of it includes another (the included paths in the group `paths`)."""

    name: str
    reads: tuple[str, ...]
    include: re.Pattern[str] | None = None


BUILD_TOOLS = (
    BuildTool(
        "make",
        ("GNUmakefile", "makefile", "Makefile"),
        re.compile(r"^\s*(?:-|s)?include\s+(?P<paths>[^#]*)"),
    ),
    BuildTool(
        "cmake",
        ("CMakeLists.txt", "CMakePresets.json", "CMakeUserPresets.json"),
        re.compile(r"^\s*include\s*\(\s*(?P<paths>[^)\s]+\.cmake)\b", re.IGNORECASE),
    ),
    BuildTool("meson", ("meson.build", "meson_options.txt", "meson.options")),
    BuildTool(
        "autotools",
        ("configure", "configure.ac", "configure.in", "Makefile.am", "Makefile.in", "aclocal.m4"),
    ),
    BuildTool("ninja", ("build.ninja",), re.compile(r"^\s*(?:include|subninja)\s+(?P<paths>\S+)")),
    BuildTool("bazel", ("BUILD", "BUILD.bazel", "WORKSPACE", "WORKSPACE.bazel", "MODULE.bazel")),
    BuildTool("scons", ("SConstruct", "Sconstruct", "sconstruct", "SConscript")),
    BuildTool("cargo", ("Cargo.toml", "Cargo.lock", "build.rs")),
    BuildTool("go", ("go.mod", "go.sum")),
    BuildTool("npm", ("package.json", "package-lock.json", "yarn.lock", "pnpm-lock.yaml")),
    BuildTool("python", ("setup.py", "setup.cfg", "pyproject.toml")),
    BuildTool("maven", ("pom.xml",)),
    BuildTool(
        "gradle", ("build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts")
    ),
)
BUILD_NAMES = frozenset(name for tool in BUILD_TOOLS for name in tool.reads)
BUILD_SUFFIXES = (".mk", ".cmake")  # what build files include, by convention
# Folders whose files are tests, whatever their names (`testing` is left out: numpy's and Go's
# are library code), and the folders of fuzz targets, which an OSS-Fuzz PoC runs.
TEST_FOLDERS = frozenset({"test", "tests", "testsuite", "__tests__", "spec", "specs"})
CHECK_FOLDERS = TEST_FOLDERS | {"fuzz", "fuzzing", "fuzzer", "fuzzers", "oss-fuzz"}
TOOL_OF = {name: tool for tool in BUILD_TOOLS for name in tool.reads}

# Files and folders a runner loads by itself, wherever they lie: a patch may not add them (the
# grade removes what it adds; one the task ships stays as the patch leaves it, and is a signal).
HOOKS: dict[str, str] = {
    "sitecustomize.py": "Python imports it at start-up",
    "usercustomize.py": "Python imports it at start-up",
    "*.pth": "Python runs its import lines at start-up",
    "pytest.ini": "pytest's configuration, read before any other",
    ".pytest.ini": "pytest's configuration, read before any other",
    "*.dist-info/": "its entry points are plugins that pytest and others load by themselves",
    "*.egg-info/": "its entry points are plugins that pytest and others load by themselves",
    "node_modules/": "node and npm find modules there before the system's",
    ".npmrc": "npm reads it by itself",
    ".yarnrc": "yarn reads it by itself",
    ".yarnrc.yml": "yarn reads it by itself",
    "go.work": "go builds the workspace it names in place of the module",
    "go.work.sum": "go reads it with go.work",
    "**/.cargo/config": "cargo reads it by itself",
    "**/.cargo/config.toml": "cargo reads it by itself",
    "rust-toolchain": "rustup runs the toolchain it names",
    "rust-toolchain.toml": "rustup runs the toolchain it names",
}
# Python modules a check runs besides those its command names with `-m`: the test runners and
# what they import at start-up. A module or package of these names that a patch adds would be
# found before the system's (`python3 -m pytest` puts its folder first on sys.path).
RUNNER_MODULES = frozenset({"pytest", "_pytest", "pluggy", "unittest", "nose", "nose2"})
_MODULE_FILES = ("{}.py", "{}/__init__.py", "{}/__main__.py")

# Build outputs by their first bytes: (what it is, the bytes it starts with).
_MAGIC = (
    ("an ELF file (object, library or executable)", b"\x7fELF"),
    ("an ar archive (static library)", b"!<arch>\n"),
    ("a thin ar archive", b"!<thin>\n"),
    ("a Mach-O file", b"\xcf\xfa\xed\xfe"),
    ("a Mach-O file", b"\xce\xfa\xed\xfe"),
    ("a Java class file or a Mach-O universal binary", b"\xca\xfe\xba\xbe"),
    ("a WebAssembly module", b"\x00asm"),
)
OUTPUT_HEAD = 16  # bytes of a file that `build_output` needs
_PYC_MAGIC = range(3000, 4000)  # CPython 3's bytecode magic numbers (3.0 is 3000s, 3.13 3571)


def is_build_file(name: str) -> bool:
    """A file of a build tool's by its name, or one that build files include by convention."""
    return name in BUILD_NAMES or name.endswith(BUILD_SUFFIXES)


def known_name(glob: str) -> bool:
    """Whether a `protected` glob names what the tables know (a build file, a test folder)
    rather than a path of one tree: no typo, even where a tree has none of it."""
    name = glob.removeprefix("!").rstrip("/")
    return "/" not in name and (is_build_file(name) or name in CHECK_FOLDERS)


def build_output(head: bytes) -> str | None:
    """What kind of build output a file starting with `head` is, or None when it is none."""
    for kind, magic in _MAGIC:
        if head.startswith(magic):
            return kind
    if (
        len(head) >= 16
        and head[2:4] == b"\r\n"
        and int.from_bytes(head[:2], "little") in _PYC_MAGIC
    ):
        return "Python bytecode"
    return None


def module_globs(modules: Iterable[str]) -> tuple[str, ...]:
    """The files that would make each module, at any depth: a module file, or what makes a
    folder a package (without them a folder is a namespace portion, which a system package
    of the name wins over)."""
    return tuple(
        f"**/{form.format(name)}" for name in sorted(set(modules)) for form in _MODULE_FILES
    )


def module_of(path: str) -> str | None:
    """The module a file at `path` makes (`pytest` for `a/pytest/__init__.py`), if it makes one."""
    parts = path.split("/")
    if parts[-1] in ("__init__.py", "__main__.py") and len(parts) > 1:
        return parts[-2]
    return parts[-1].removesuffix(".py") if parts[-1].endswith(".py") else None


_PYTHON_M = re.compile(r"\bpython[0-9.]*(?:\s+-[A-Za-z]+)*\s+-m\s*([A-Za-z_][\w]*)")


def run_modules(commands: Iterable[str]) -> frozenset[str]:
    """The modules the commands run with `python -m`, and the test runners'."""
    found = {match[1] for command in commands for match in _PYTHON_M.finditer(command)}
    return RUNNER_MODULES | found


def literal_glob(path: str) -> str:
    """`path` as a glob anchored at the tree's top that matches it alone."""
    return "/" + re.sub(r"([\\*?\[\]!#])", r"\\\1", path)


@dataclass
class Graft:
    """What a grade did to a patch before any check ran: the paths it put back as shipped
    (`reverted`: protected ones, and those a patch may not add) and the build outputs it dropped
    (`dropped`: each path with what it was)."""

    reverted: list[str] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TreeRules:
    """What a grade keeps as shipped (`protected`: the task's globs and what its protected build
    files stand for) and which paths a patch may not add (`no_add`)."""

    protected: tuple[str, ...] = ()
    no_add: tuple[str, ...] = ()


def included_globs(folder: str, tool: BuildTool, lines: list[str]) -> Iterable[str]:
    """The tree paths a build file in `folder` includes, as globs (make's are globs too);
    a path made of variables, or one out of the tree, is skipped."""
    if tool.include is None:
        return
    for line in lines:
        found = tool.include.match(line)
        for word in found["paths"].split() if found else ():
            if "$" in word or "(" in word or word.startswith("/"):
                continue
            path = posixpath.normpath(posixpath.join(folder, word))
            if path != "." and not path.startswith("../"):
                yield "/" + re.sub(r"([\\!#\[\]])", r"\\\1", path)


def tree_rules(
    entries: Iterable[tuple[str, bool]],
    protected: Sequence[str],
    read: Callable[[str], list[str]],
    modules: Iterable[str] = RUNNER_MODULES,
) -> TreeRules:
    """The rules for a pristine tree of `entries` (each path and whether it is a folder), its
    task's `protected` globs, a shipped file's lines (`read`) and the modules its checks run."""
    no_add = [*HOOKS, *module_globs(modules)]
    if not protected:
        return TreeRules((), tuple(no_add))
    rules, extra, tools = Ignore.of(protected), [], TOOL_OF
    for path, is_folder in entries:
        name = posixpath.basename(path)
        if is_folder or name not in tools or not rules.excludes(path):
            continue
        folder = posixpath.dirname(path)
        prefix = f"{folder}/" if folder else ""
        extra += [literal_glob(prefix + sibling) for sibling in tools[name].reads]
        extra += included_globs(folder, tools[name], read(path))
        no_add += [literal_glob(prefix + other) for other in sorted(BUILD_NAMES)]
    kept = [glob for glob in dict.fromkeys(extra) if glob not in protected]
    return TreeRules((*protected, *kept), tuple(dict.fromkeys(no_add)))
