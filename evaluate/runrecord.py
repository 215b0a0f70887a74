"""Which run an output folder holds: its id and when it first started, in `OUT/run.json`.

Two runs into one `--out` could not be told apart, and a second predictions file graded there
silently replaced the first one's summary while its verdict folders stayed. So the first run
into an `OUT` records its id there (`--run-id`, by default the predictions file's stem), a rerun
of the same run resumes, and a run of another id is refused in one line: give it an `--out` of
its own. The shards of one run share its id (one file, one stem) and so one `OUT`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import Field

from ssebench.core.errors import ConfigError
from ssebench.evaluate.predictionline import plain_name
from ssebench.evaluate.runshapes import RunSettings
from ssebench.evaluate.verdicts import Shape, dump, write_json

RUN_RECORD = "run.json"


class RunRecord(Shape):
    """`OUT/run.json`: the run whose verdicts OUT holds."""

    run_id: str = Field(description="its id")
    started: str = Field(description="when it first started grading into OUT, ISO 8601 in UTC")


@dataclass(frozen=True)
class RunFields:
    """What summary.json and the page say of the run itself."""

    run_id: str
    started: str
    ended: str
    settings: RunSettings


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def run_id_of(given: str | None, predictions: Path) -> str:
    """The run's id: `--run-id`, else the predictions file's stem; it names files of the run
    (`<model>.<run id>.json`), so it must be able to."""
    run_id = given if given is not None else predictions.stem
    if not plain_name(run_id) or run_id.startswith("."):
        flag = "--run-id" if given is not None else f"the run id {predictions.name} gives"
        raise ConfigError(f"{flag} {run_id!r} cannot name a file: give --run-id NAME")
    return run_id


def claim(out: Path, run_id: str) -> RunRecord:
    """The run OUT holds, or this one when it holds none yet (recorded by `keep` once nothing
    else stops the run: a refused run leaves nothing behind); ConfigError when it holds another."""
    path = out / RUN_RECORD
    try:
        held = RunRecord.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return RunRecord(run_id=run_id, started=now())
    except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        why = getattr(exc, "strerror", None) or "not a run record of ssebench's"
        raise ConfigError(f"{path}: {why}: remove it, or give another --out") from None
    if held.run_id != run_id:
        raise ConfigError(
            f"{out} holds the run {held.run_id!r} ({RUN_RECORD}), not {run_id!r} (--run-id, by "
            f"default the predictions file's stem): give this run an --out of its own, or "
            f"--run-id {held.run_id} to go on with that one"
        )
    return held


def keep(out: Path, record: RunRecord) -> None:
    """OUT's run recorded before its first verdict, unless it is already (a rerun, a shard)."""
    path = out / RUN_RECORD
    if path.exists():
        return
    try:
        write_json(path, dump(record))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot record the run: {exc.strerror or exc}") from None
