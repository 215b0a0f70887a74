"""python3 -m cfgparse FILE: print every option as section.key = value, references resolved.

Exit status: 0 success, 2 usage error or an unreadable or invalid file.
"""

from __future__ import annotations

import sys

from .parser import ConfigError, parse


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python3 -m cfgparse FILE", file=sys.stderr)
        return 2
    try:
        with open(args[0], encoding="utf-8") as file:
            config = parse(file.read())
        # Resolve everything before printing, so an error leaves no partial output.
        lines = [
            f"{section}.{key} = {value}"
            for section in config.sections()
            for key, value in config.items(section)
        ]
    except (OSError, UnicodeDecodeError, ConfigError) as exc:
        print(f"cfgparse: error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
