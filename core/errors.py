"""The errors that cross layers, in one place so no layer imports another's machinery to raise one.

Each maps to one outcome the user sees: a ConfigError or PluginError is one line and exit
status 2; a DaemonError is the spec's internal-failure text (exit status 3 on the command line).
"""

from __future__ import annotations


class ConfigError(Exception):
    """A bad setting, flag or task: reported as one line, exit status 2."""


class PluginError(ConfigError):
    """A plugin that cannot be used: start-up stops, a benchmark must not run a check short."""


class PatchError(Exception):
    """A patch that does not apply: the grade's verdict (unresolved), given with git's reason."""


class DaemonError(Exception):
    """Testing itself failed (the daemon unreachable, a malformed answer): not the patch's fault."""
