"""What one ssebench asks of another it starts, as typed records: never flags to parse again.

A benchmark run grades each prediction in a process of its own, a dataset validates each task
in one, a grade in a task's image is ssebench in a container, and `ssebench run`'s server is a
process of its own. The parent writes what it wants as one of these requests, the child's one
argument (core/cli/child.py runs it); a grade or a validation answers with one `Ended` record
on stdout (evaluate/ended.py). Each holds the `Basis` its child's root is built from, so a child
takes the parent's settings as they were read, and the isolation the parent proved here
without another probe. The command line builds the same requests from its flags: a command
runs the same way whoever asked for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ssebench.core.daemons.door import Mechanism
from ssebench.core.settings import Settings


class Record(BaseModel):
    # Built at first use: `serve` starts building only its Basis (bench/startup.py).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Basis(Record):
    """What a command's root is made from (core/cli/root.py): its settings (None: read where it
    runs, as in a task's image), its task (read as the image has it: `for_image`; `tree_mb`
    in place of its `limits.tree_mb`), how its cases are confined (`mechanism`: proven by the
    parent on this machine, taken as it is; else `isolation` is chosen here) and who they run
    as, and the API of a daemon at an address."""

    settings: Settings | None = None
    task: Path | None = None
    for_image: bool = False
    tree_mb: int | None = None
    isolation: str = "auto"
    case_user: str | None = None
    mechanism: Mechanism | None = None
    daemon_api: str = "auto"


class VerdictRequest(Record):
    """A request that a verdict answers (a grade's, a validation's): its basis, the folder
    where its cases' logs are kept (None: nowhere), and whether its progress goes unsaid."""

    basis: Basis
    logs: Path | None = None
    quiet: bool = False


class GradePatchRequest(VerdictRequest):
    """`grade --task --patch`: the patch on a pristine copy, here or in the task's image."""

    command: Literal["grade --patch"] = "grade --patch"
    patch: Path
    backend: str = "local"
    every_case: bool = False


class GradeFreshRequest(VerdictRequest):
    """`grade --fresh-container`: the tree where it is, in the fresh container of the task's
    image that the grade owns (what `--backend docker` starts)."""

    command: Literal["grade --fresh-container"] = "grade --fresh-container"
    every_case: bool = False


class ValidateRequest(VerdictRequest):
    """`validate --task --fix`: is the task sound, here or in its image."""

    command: Literal["validate --fix"] = "validate --fix"
    fix: Path
    backend: str = "local"
    runs: int = 1


class ServeRequest(Record):
    """`serve`: test_patch over MCP for the basis' task (embedded daemon) or at its daemon's
    address (sidecar mode), listening where these say; each call recorded in `calls`."""

    command: Literal["serve"] = "serve"
    basis: Basis
    host: str
    port: int
    daemon_port: int
    allow_remote: bool = False
    allowed_hosts: tuple[str, ...] = ()
    calls: Path | None = None  # where each call's record goes (`run --prediction-out`'s own file)


Request = Annotated[
    GradePatchRequest | GradeFreshRequest | ValidateRequest | ServeRequest,
    Field(discriminator="command"),
]
REQUESTS: TypeAdapter[Request] = TypeAdapter(Request, config=ConfigDict(defer_build=True))
