"""cfgparse: a small INI-style configuration parser with ${...} references."""

from .parser import Config, ConfigError, parse

__all__ = ["Config", "ConfigError", "parse"]
