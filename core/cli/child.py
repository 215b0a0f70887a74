"""ssebench started by ssebench: `python -m ssebench.core.cli.child REQUEST`.

REQUEST is one of core/cli/requests.py's records as JSON, written by the parent: a benchmark
run's grade of one prediction, a dataset's validation of one task, a grade in a fresh container
of a task's image (boot.py's `--request`), or `ssebench run`'s server. The child builds its root
from the request's basis and runs the command the request names, as the command line runs it.
A grade or a validation then writes one `Ended` record on stdout (evaluate/ended.py), and nothing
else there: its verdict, or the error that stopped it, in the one line stderr also says it in.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pydantic import BaseModel

from ssebench.core.cli import finish, log_to_stderr
from ssebench.core.cli.parser import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from ssebench.core.cli.requests import REQUESTS, ServeRequest
from ssebench.core.cli.root import Root
from ssebench.core.cli.startup import skip_httpx_cli
from ssebench.core.errors import ConfigError, NoVerdict
from ssebench.evaluate.ended import Ended


def verdict_of(request: object) -> tuple[BaseModel, bool]:
    """What a grade's or a validation's request comes to: its verdict, and whether it is a
    good one (resolved, sound)."""
    from ssebench.core.cli.grading import grade_fresh, grade_patch
    from ssebench.core.cli.requests import GradeFreshRequest, GradePatchRequest, ValidateRequest
    from ssebench.core.cli.validating import validate_task
    from ssebench.evaluate.validation import validation_record

    if isinstance(request, GradePatchRequest):
        grade = grade_patch(Root(request.basis), request)
        return grade, grade.resolved
    if isinstance(request, GradeFreshRequest):
        grade = grade_fresh(Root(request.basis), request)
        return grade, grade.resolved
    assert isinstance(request, ValidateRequest)
    validation = validate_task(Root(request.basis), request)
    return validation_record(validation), validation.sound


def ended(request: object) -> Ended[BaseModel]:
    """The record of the request's end; an error is said on stderr as the command line says it."""
    try:
        verdict, good = verdict_of(request)
    except ConfigError as exc:
        print(f"ssebench: error: {exc}", file=sys.stderr)
        return Ended(status=EXIT_USAGE, error=str(exc))
    except NoVerdict as exc:
        return Ended(status=exc.status, error=exc.reason)
    return Ended(status=EXIT_OK if good else EXIT_FAILED, verdict=verdict)


def main(argv: Sequence[str] | None = None) -> None:
    skip_httpx_cli()
    log_to_stderr()
    (raw,) = sys.argv[1:] if argv is None else argv
    request = REQUESTS.validate_json(raw)  # ours: a bad one is a bug, with its traceback
    if isinstance(request, ServeRequest):
        from ssebench.core.cli.serve import serve

        sys.exit(finish(lambda: serve(Root(request.basis), request)))
    try:
        record = ended(request)
    except KeyboardInterrupt:  # the parent stopping us: it reads nothing more
        sys.exit(130)
    print(record.model_dump_json(serialize_as_any=True), flush=True)  # the verdict's fields
    sys.exit(record.status)


if __name__ == "__main__":
    main()
