"""What an upstream task's Dockerfile says that its `sse/` folder does not: the environment its
image sets (`ENV`), and what it makes of `/ssebench` beyond copying `sse/` there.

Read as data, never built: the instructions of the final stage (and of the stages it is built
`FROM`), line continuations joined, comments dropped. A value that names a variable the file
does not set (`PATH="$GOPATH/bin:$PATH"`: the base image's) cannot be known here and is left out,
as are the names a case's environment has of its own (PATH, HOME, TMPDIR, USER, LOGNAME) and
ssebench's (`SSE_*`).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

# A case's own: the daemon sets them (PATH: the folders a case can reach of the user's).
OWN = frozenset({"PATH", "HOME", "TMPDIR", "USER", "LOGNAME"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REFERENCE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_SHARED = "/ssebench"


@dataclass
class Stage:
    """One `FROM` stage: its name (`AS name`), what it is built from, its instructions."""

    name: str
    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)


def instructions(text: str) -> list[tuple[str, str]]:
    """Each instruction as (KEYWORD, the rest), continuation lines joined."""
    found: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        if not pending and line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        if whole and not whole.startswith("#"):
            keyword, _, rest = whole.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def stages(text: str) -> list[Stage]:
    found: list[Stage] = []
    for keyword, rest in instructions(text):
        if keyword == "FROM":
            words = [w for w in rest.split() if not w.startswith("--")]
            name = words[2].lower() if len(words) > 2 and words[1].lower() == "as" else ""
            found.append(Stage(name, words[0].lower() if words else ""))
        elif found:
            found[-1].instructions.append((keyword, rest))
    return found


def image_env(text: str) -> dict[str, str]:
    """The variables the final stage's `ENV` sets (and those of the stages it is built
    from), each as its value expands, where the file alone tells it."""
    built = stages(text)
    if not built:
        return {}
    chain, base = [built[-1]], built[-1].base
    earlier = {stage.name: stage for stage in built[:-1] if stage.name}
    while base in earlier and earlier[base] not in chain:
        chain.insert(0, earlier[base])
        base = earlier[base].base
    known: dict[str, str | None] = {}  # ENV and ARG values so far (None: not known here)
    set_by_env: set[str] = set()
    for keyword, rest in (pair for stage in chain for pair in stage.instructions):
        if keyword not in ("ENV", "ARG"):
            continue
        for name, value in _assignments(rest, legacy=keyword == "ENV"):
            if keyword == "ENV" or name not in set_by_env:
                known[name] = None if value is None else _expand(value, known)
            set_by_env |= {name} if keyword == "ENV" else set()
    return {
        name: value
        for name, value in known.items()
        if name in set_by_env and value is not None
        and name not in OWN and not name.startswith("SSE_")
    }  # fmt: skip


def _assignments(rest: str, *, legacy: bool) -> list[tuple[str, str | None]]:
    """`NAME=value ...` (quotes as a shell reads them); `ENV NAME value` (legacy: the rest of
    the line is the value); an ARG with no default has none (None)."""
    try:
        words = shlex.split(rest, posix=True)
    except ValueError:
        return []
    if legacy and words and "=" not in words[0]:
        name, _, value = rest.partition(" ")
        return [(name, value.strip())] if _NAME.fullmatch(name) else []
    found: list[tuple[str, str | None]] = []
    for word in words:
        name, equals, value = word.partition("=")
        if _NAME.fullmatch(name):
            found.append((name, value if equals else None))
    return found


def _expand(value: str, known: dict[str, str | None]) -> str | None:
    """`value` with `$NAME` and `${NAME}` of `known` filled in; None when one is unknown."""
    unknown = False

    def fill(found: re.Match[str]) -> str:
        nonlocal unknown
        named = known.get(found[1] or found[2])
        unknown = unknown or named is None
        return named or ""

    expanded = _REFERENCE.sub(fill, value)
    return None if unknown else expanded


def image_made(text: str) -> list[str]:
    """The final stage's instructions (each on one line) that put in the image's /ssebench what
    `sse/` does not hold: a `RUN` that writes there (a Go PoC module's `go mod init`; not a
    mere chmod), a `COPY` into it from elsewhere (a Rust harness)."""
    built = stages(text)
    found = []
    for keyword, rest in built[-1].instructions if built else []:
        if _SHARED not in rest:
            continue
        commands = [part.strip() for part in re.split(r"&&|;|\|\|", rest)]
        if keyword == "RUN" and not all(part.startswith("chmod ") for part in commands):
            found.append(" ".join(["RUN", *rest.split()]))
        elif keyword in ("COPY", "ADD"):
            words = [w for w in rest.split() if not w.startswith("--")]
            if any(not re.match(r"(\./)?sse(/|$)", w) for w in words[:-1]):
                found.append(" ".join([keyword, *rest.split()]))
    return found
