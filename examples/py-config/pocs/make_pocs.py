#!/usr/bin/env python3
"""Write the proof-of-concept inputs next to this script (the .ini files are committed too).

  cycle.ini  two options that refer to each other: resolving either recurses forever
  deep.ini   an acyclic chain of 2000 references: resolving its head recurses past
             Python's recursion limit even though it would end
Both make the unfixed parser raise RecursionError, which the CLI does not catch.
"""

from pathlib import Path

CYCLE = """\
[paths]
root = ${base}/srv
base = ${root}/..
"""

DEPTH = 2000
DEEP = "[chain]\n" + "".join(f"k{i} = ${{k{i + 1}}}\n" for i in range(DEPTH)) + f"k{DEPTH} = end\n"

if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    for name, text in {"cycle.ini": CYCLE, "deep.ini": DEEP}.items():
        (here / name).write_text(text)
        print(f"wrote {name} ({len(text)} bytes)")
