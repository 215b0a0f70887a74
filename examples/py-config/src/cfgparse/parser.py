"""The parser and the resolution of references.

Syntax:
    # or ; starts a comment line
    [section]
    key = value

A value may refer to another option: ${key} (same section) or ${section:key}; $$ is a literal $.
References are resolved when a value is read, so they may point forward in the file.
"""

from __future__ import annotations

import re

_SECTION = re.compile(r"\[\s*([^\]\s]+)\s*\]")
_OPTION = re.compile(r"([^=\s]+)\s*=\s*(.*)")
_REFERENCE = re.compile(r"\$(?:\$|\{(?:(?P<section>[^}:]+):)?(?P<key>[^}:]+)\})")


class ConfigError(ValueError):
    """The text is malformed, or a value cannot be resolved."""


class Config:
    def __init__(self) -> None:
        self._data: dict[str, dict[str, str]] = {}

    def sections(self) -> list[str]:
        return list(self._data)

    def options(self, section: str) -> list[str]:
        if section not in self._data:
            raise ConfigError(f"no such section: {section}")
        return list(self._data[section])

    def raw(self, section: str, key: str) -> str:
        """The value as written, references unresolved."""
        try:
            return self._data[section][key]
        except KeyError:
            raise ConfigError(f"no such option: {section}:{key}") from None

    def get(self, section: str, key: str) -> str:
        """The value with every reference resolved."""
        return self._resolve(section, key)

    def items(self, section: str) -> list[tuple[str, str]]:
        return [(key, self.get(section, key)) for key in self.options(section)]

    def _resolve(self, section: str, key: str) -> str:
        def replace(match: re.Match[str]) -> str:
            if match["key"] is None:  # $$
                return "$"
            return self._resolve(match["section"] or section, match["key"])

        return _REFERENCE.sub(replace, self.raw(section, key))


def parse(text: str) -> Config:
    config = Config()
    current: dict[str, str] | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if match := _SECTION.fullmatch(line):
            current = config._data.setdefault(match[1], {})
        elif match := _OPTION.fullmatch(line):
            if current is None:
                raise ConfigError(f"line {lineno}: option outside any section")
            current[match[1]] = match[2]
        else:
            raise ConfigError(f"line {lineno}: cannot parse {line!r}")
    return config
