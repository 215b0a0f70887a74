"""Start-up tuning, in one place, each trick with the figure that justifies it (bench/startup.py).

- `skip_httpx_cli`: `import httpx` also imports httpx's own command line (click, rich,
  pygments) when they are installed, as fastmcp's dependencies are: ~150 ms after fastmcp is
  loaded. We never use it, and httpx copes without it.
- `loading`: imports make only long-lived objects, yet each full collection walks all of them:
  172-196 ms of the server's start-up went to the cycle collector (2 full collections), and
  later ~50 ms pauses inside calls. Importing with the collector off and freezing what was
  loaded leaves ~20 ms. The command line's own modules (parser, settings, the command's
  family) load the same way: ~5 ms more.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator


def skip_httpx_cli() -> None:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


@contextlib.contextmanager
def loading() -> Iterator[None]:
    """Import without the cycle collector, then freeze what was loaded out of its scans."""
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
