"""`ssebench import FORMAT SOURCE --out DIR`: another benchmark's tasks as ssebench task folders,
written all at once or not at all (evaluate/importers)."""

from __future__ import annotations

import argparse
import functools
import re
import sys
from pathlib import Path

from ssebench.core.cli.parser import EXIT_OK
from ssebench.core.cli.root import Root
from ssebench.core.daemons.door import IMAGE, load_task
from ssebench.core.errors import ConfigError
from ssebench.evaluate.importers.common import Imported, write_tasks


def cmd_import(args: argparse.Namespace, root: Root) -> int:
    if args.format != "upstream":
        for flag, value in (("--source", args.source), ("--image", args.image)):
            if value is not None:
                raise ConfigError(f"{flag} is for `ssebench import upstream`")
    if args.image is not None and not re.fullmatch(IMAGE, args.image):
        example = 'e.g. "debian:12"'
        raise ConfigError(f"--image: must be a Docker image name, {example} (got {args.image!r})")
    tasks = _read(args)
    checks = root.registry.checks
    # Loaded back as `grade --backend docker` loads them: the image's own paths are not here.
    load = functools.partial(load_task, checks=checks, for_image=True)
    for folder in write_tasks(args.out, tasks, load):
        print(folder)
    for task in tasks:
        for note in task.notes:
            print(f"ssebench: import {args.format}: {task.id}: {note}", file=sys.stderr)
    if args.format == "arvo":
        from ssebench.evaluate.importers.arvo import WITHHELD

        print(f"ssebench: import arvo: {WITHHELD}", file=sys.stderr)
    return EXIT_OK


def _read(args: argparse.Namespace) -> list[Imported]:
    given: Path = args.path.absolute()  # what each task records it came from
    if args.format == "upstream":
        from ssebench.evaluate.importers.upstream import import_upstream

        if not given.is_dir():
            raise ConfigError(f"{given}: no such folder (an upstream task folder, or /ssebench)")
        source = _source(args.source)
        return import_upstream(given, source=source, image=args.image)
    if not given.is_file():
        raise ConfigError(f"{given}: no such file")
    if args.format == "secb":
        from ssebench.evaluate.importers.secb import import_secb

        return import_secb(given)
    from ssebench.evaluate.importers.arvo import import_arvo

    return import_arvo(given)


def _source(path: Path | None) -> Path | None:
    """`--source`: the tree on this machine, to run the task here instead of in its image."""
    if path is None:
        return None
    if not path.is_dir():
        raise ConfigError(f"--source {path}: no such folder")
    return path.resolve()
