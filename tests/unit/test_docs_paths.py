"""README.md and docs/ name only what the repository holds: every path of it they mention exists,
every module they name can be imported by that name, every link resolves inside the repository
(to a heading of the page where it names one), and the README's map of the code names every
package. So a module renamed or removed cannot leave a page behind.

A page names the repository's files by their path from its root (`daemon/confine/runner.py`); a
path of another tree (a task's, a plugin's) is written from that tree's root or with its variable
(`$SSE_TASK_DIR/scripts/build.sh`), so that it is not read as one of ours. bench/RESULTS.md is
history: it may name what is gone, in a paragraph that says so (`gone`, or where it is `today`).
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
HISTORY = ROOT / "bench" / "RESULTS.md"
# The repository's own top-level folders: a path that starts with one of them is ours.
FOLDERS = ("core", "daemon", "plugins", "testing", "tests", "examples", "bench", "docs", "scripts",
           ".ci")  # fmt: skip
PACKAGES: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
    "setuptools"
]["package-dir"]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```$", re.M | re.S)
CODE = re.compile(r"(`+)(.+?)\1", re.S)
PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)*/?")
MODULE = re.compile(r"ssebench(?:\.\w+)+")
LINK = re.compile(r"\]\(([^)\s]+)\)")
MAP_HEADING = "## Where the code is"
NAME = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+(?:\.py|\.md|\.sh|/))(?![\w/])")


def repository_paths(text: str) -> list[str]:
    """The repository's paths named in code spans of the page's prose (not in its code blocks)."""
    spans = (span.strip() for _, span in CODE.findall(FENCE.sub("", text)))
    return [
        span
        for span in spans
        if PATH.fullmatch(span) and "/" in span and span.split("/")[0] in FOLDERS
    ]


def _names(module: Path) -> set[str]:
    """What a module defines or imports at its top level (an `if` there included)."""
    found: set[str] = set()
    nodes = list(ast.parse(module.read_text()).body)
    while nodes:
        node = nodes.pop()
        if isinstance(node, ast.If | ast.Try):
            nodes += [*node.body, *node.orelse]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return found


def module_exists(dotted: str, root: Path) -> bool:
    """Whether `ssebench.x.y[.name]` is a module of the checkout, or a name one defines."""
    parts = dotted.split(".")
    folder = PACKAGES.get(".".join(parts[:2]))
    if folder is None:
        return True  # not one of our packages (an entry point group, say): not ours to check
    here, rest = root / folder, parts[2:]
    while rest and (here / rest[0]).is_dir():
        here, rest = here / rest[0], rest[1:]
    if not rest:
        return (here / "__init__.py").is_file()
    if (here / f"{rest[0]}.py").is_file():
        here, rest = here / f"{rest[0]}.py", rest[1:]
    else:
        here = here / "__init__.py"
    return not rest or (here.is_file() and rest[0] in _names(here))


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of the page's headings: lower case, punctuation dropped, spaces to -."""
    headings = re.findall(r"^#+ (.+)$", FENCE.sub("", page.read_text()), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def link_problem(page: Path, target: str, root: Path) -> str | None:
    if target.startswith(("http://", "https://", "/")):
        return f"{target} leaves the repository"
    file, _, anchor = target.partition("#")
    path = (page.parent / file).resolve() if file else page
    if not path.is_relative_to(root):
        return f"{target} leaves the repository"
    if not path.exists():
        return f"{target} does not exist"
    if anchor and path.suffix == ".md" and anchor not in _anchors(path):
        return f"{target}: no heading there has the anchor #{anchor}"
    return None


def paragraphs(text: str, *, history: bool) -> list[str]:
    """The page's paragraphs (a list item is one), less those that say what they name is gone
    when the page is history."""
    found = re.split(r"\n\s*\n|\n(?=\s*- )", FENCE.sub("", text))
    return [each for each in found if not (history and re.search(r"\b(gone|today)\b", each))]


def page_problems(page: Path, root: Path = ROOT, *, history: bool = False) -> list[str]:
    """What the page names that the checkout at `root` does not hold."""
    text = page.read_text(encoding="utf-8")
    found = []
    for paragraph in paragraphs(text, history=history):
        found += [f"`{path}` does not exist" for path in repository_paths(paragraph)
                  if not (root / path).exists()]  # fmt: skip
        spans = (span.strip() for _, span in CODE.findall(paragraph))
        found += [f"`{span}` is no module or name of ours" for span in spans
                  if MODULE.fullmatch(span) and not module_exists(span, root)]  # fmt: skip
    found += [problem for target in LINK.findall(text)
              if (problem := link_problem(page, target, root)) is not None]  # fmt: skip
    if "../shared" in text:
        found.append("names ../shared, which is not in the repository")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_path_module_and_link_a_page_names_is_in_the_repository(page: Path) -> None:
    assert page_problems(page) == []


def test_the_benchmarks_history_says_what_is_gone() -> None:
    assert page_problems(HISTORY, history=True) == []
    named = page_problems(HISTORY)  # what it names that is gone, each where it says so
    assert "`core/logend.py` does not exist" in named


def test_the_rules_refuse_what_the_checkout_does_not_hold(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "logs.py").write_text("def view_log(): ...\n")
    (tmp_path / "docs" / "ok.md").write_text("# Top\n\n## The log\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "`core/logs.py` and `core/logend.py`; `ssebench.core.logs.view_log` and "
        "`ssebench.core.logs.LogAccumulator`, `ssebench.core.logfiles`; a task's "
        "`$SSE_TASK_DIR/scripts/build.sh`, a glob `tests/**`, a plugin's `ssebench_lint/x.py`.\n\n"
        "```\ncore/gone.py in a code block is an example, not a claim\n```\n\n"
        "[fine](ok.md#the-log) [gone](gone.md) [anchor](ok.md#the-logs) [out](../../x.md) "
        "[web](https://example.com) [self](#top)\n\n# Top\n"
    )
    assert page_problems(page, tmp_path) == [
        "`core/logend.py` does not exist",
        "`ssebench.core.logs.LogAccumulator` is no module or name of ours",
        "`ssebench.core.logfiles` is no module or name of ours",
        "gone.md does not exist",
        "ok.md#the-logs: no heading there has the anchor #the-logs",
        "../../x.md leaves the repository",
        "https://example.com leaves the repository",
    ]


def test_history_may_name_what_is_gone_only_where_it_says_so(tmp_path: Path) -> None:
    page = tmp_path / "RESULTS.md"
    page.write_text(
        "Kept its end (`core/logend.py`; that module is gone since).\n\n"
        "- bound by `core/server.py` (today `core/server/listen.py`)\n"
        "- read by `core/logfiles.py`, `ssebench.core.upstream`\n"
    )
    assert page_problems(page, tmp_path, history=True) == [
        "`core/logfiles.py` does not exist",
        "`ssebench.core.upstream` is no module or name of ours",
    ]


def code_map(readme: str) -> dict[str, list[str]]:
    """The README's map of the code: each folder it lists, and the names its line gives (a file,
    `name.py`, or a folder below, `name/`), each relative to that folder."""
    section = readme[readme.index(MAP_HEADING) :]
    found: dict[str, list[str]] = {}
    folder = ""
    for line in FENCE.search(section).group(1).splitlines():  # type: ignore[union-attr]
        head, _, words = line.partition(" ")
        if head:
            folder, words = head.rstrip("/"), words
            found[folder] = []
        found[folder] += NAME.findall(words)
    return found


def map_problems(readme: str, root: Path = ROOT) -> list[str]:
    """What the README's map names that is not there, and the packages it leaves out."""
    mapped = code_map(readme)
    found = [f"{folder}/ does not exist" for folder in mapped if not (root / folder).is_dir()]
    found += [f"{folder}/{name} does not exist" for folder, names in mapped.items()
              for name in names if not (root / folder / name).exists()]  # fmt: skip
    named = {*mapped, *(f"{folder}/{n.rstrip('/')}" for folder, ns in mapped.items() for n in ns)}
    packages = sorted(str(init.parent.relative_to(root)) for folder in PACKAGES.values()
                      for init in (root / folder).rglob("__init__.py"))  # fmt: skip
    found += [f"the map leaves out the package {package}/" for package in packages
              if package not in named]  # fmt: skip
    return found


def test_the_readmes_map_of_the_code_is_the_tree() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(code_map(readme)) >= 12
    assert map_problems(readme) == []


def test_the_map_rule_refuses_a_name_that_is_gone_and_a_package_left_out(tmp_path: Path) -> None:
    for package in ("core", "core/cli", "core/daemons", "daemon", "plugins/build", "testing"):
        (tmp_path / package).mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "core" / "logs.py").write_text("")
    (tmp_path / "core" / "daemons" / "door.py").write_text("")
    readme = (
        f"{MAP_HEADING}\n\n```\ncore/          logs.py (the tail rule), logend.py, a `cli/`\n"
        "core/daemons/  local.py, door.py\n               native.py (continued)\n"
        "daemon/        confine/\nplugins/       build/\nbench/\n```\n"
    )
    assert map_problems(readme, tmp_path) == [
        "bench/ does not exist",
        "core/logend.py does not exist",
        "core/daemons/local.py does not exist",
        "core/daemons/native.py does not exist",
        "daemon/confine/ does not exist",
        "the map leaves out the package testing/",
    ]
