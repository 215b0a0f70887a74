"""A kit for testing checks: throw-away tasks run through the real daemon's case service, in
this process.

Also a pytest plugin (entry point `pytest11`): the `ssebench_task` fixture makes tasks in the
test's tmp_path. Beside the kit, and never imported by it (a plugin of every pytest session
loads no transport): `servers`, `ports`, `calls`, `procs`, `waiting`, `images` and `slurm`, the
helpers of our own tests and benchmarks.
"""

from __future__ import annotations

from ssebench.testing.kit import TaskHandle, make_task, task_toml

try:
    from ssebench.testing.plugin import ssebench_task
except ModuleNotFoundError as missing:  # the benchmarks use the helpers beside the kit without it
    if missing.name != "pytest":
        raise

__all__ = ["TaskHandle", "make_task", "ssebench_task", "task_toml"]
