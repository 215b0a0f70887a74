"""How a child ssebench ended, as it tells the ssebench that started it: one typed record.

A benchmark run's grades, a dataset's validations and a grade in a task's image are each a
process of their own (core/cli/child.py). Each writes one `Ended` line on stdout and nothing
else there: its verdict as the model the evaluator reads (a `PatchGrade`, a `Validation`), or
why it has none, in the one line its stderr said it in. The parent reads that record with the
model; the child's stderr (progress, and the cause again) is only kept, never read back.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict, model_validator

V = TypeVar("V", bound=BaseModel)


class Ended(BaseModel, Generic[V]):
    """A verdict (exit status 0 or 1, as the command's own), or the error that stopped it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: int
    verdict: V | None = None
    error: str | None = None

    @model_validator(mode="after")
    def _one_of_the_two(self) -> Ended[V]:
        if (self.verdict is None) == (self.error is None):
            raise ValueError("a verdict or an error, exactly one")
        return self


def read_ended(verdict: type[V], output: bytes) -> Ended[V] | None:
    """The record a child wrote on stdout; None when it wrote none (it crashed, was killed)."""
    try:
        return Ended[verdict].model_validate_json(output)  # type: ignore[valid-type]
    except ValueError:  # pydantic's ValidationError is one
        return None


def why_no_verdict(status: int, ended: Ended[V] | None) -> str:
    """A child that gave no verdict, in one line: what killed it, else the error it recorded."""
    if status < 0:
        return f"killed by signal {-status}"
    if ended is not None and ended.error is not None:
        return f"exit status {status}: {ended.error}"
    return f"exit status {status} but no verdict on stdout"
