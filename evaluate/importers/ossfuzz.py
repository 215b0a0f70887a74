"""task.toml of a task that OSS-Fuzz's `compile` builds in its image (SEC-bench's, ARVO's): the
tree where the image has it, what `compile` reads and writes, the image's build variables, the
build, and one PoC judged by its benchmark's rule."""

from __future__ import annotations

from dataclasses import dataclass

from ssebench.core.tomltext import toml_array, toml_string
from ssebench.evaluate.importers.common import BUILD_ENV
from ssebench.evaluate.importers.protection import protected_globs, protected_lines


@dataclass(frozen=True)
class PocRun:
    """How an OSS-Fuzz task's one PoC runs: its input (the PoC check's own file), its command
    and time limit, and how it is judged (`why`, comment lines; `rule`, the lines of its
    `triggered_if` table)."""

    input: str
    run: str
    seconds: int
    why: str
    rule: str


def oss_fuzz_toml(
    head: str,
    where: tuple[str, str],
    build: str,
    poc: PocRun,
    fix: bytes | None,
    env: str = "",
) -> str:
    """The task.toml: `head` its first lines, `where` its tree and image, `fix` its reference
    fix (whose paths stay the agent's), `env` TOML lines of its environment."""
    source, image = where
    return f"""\
{head}source = {toml_string(source)}
image = {toml_string(image)}
{protected_lines(protected_globs(None, fix)).rstrip()}
# OSS-Fuzz's compile reads the build script and what the image fetched under /src, and writes
# /out and /work.
readable = ["/src"]
writable = ["/out", "/work"]
# The image's build variables (a case's environment is an allow-list).
{toml_array(list(BUILD_ENV), "pass_env")}
{env}
[checks.build]
run = {toml_string(build)}

{poc.why}
[checks.pocs]
files = [{toml_string(poc.input)}]
run = {toml_string(poc.run)}
timeout = {poc.seconds}

[checks.pocs.triggered_if]
{poc.rule}"""
