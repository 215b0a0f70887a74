"""`python -m ssebench.core.cli`: ssebench where no `ssebench` script was installed (a copy of
it brought into a task's image)."""

from __future__ import annotations

from ssebench.core.cli import main

main()
