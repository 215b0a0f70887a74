"""Intent tests for the fix: references that loop, or nest without end, are reported as a
ConfigError (and by the CLI as a clean error, exit status 2) instead of crashing with
RecursionError; ordinary chains of references still resolve."""

import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

# Run as `python3 intent/test_fix.py` from the source tree: import the tree's package.
SOURCE = Path(os.environ.get("SSE_SOURCE_DIR", os.getcwd())).resolve()
sys.path.insert(0, str(SOURCE))

from cfgparse import ConfigError, parse  # noqa: E402


def chain(length: int) -> str:
    """[c] with c0 = ${c1}, c1 = ${c2}, ..., ending in the value "end"."""
    lines = [f"c{i} = ${{c{i + 1}}}" for i in range(length)]
    return "[c]\n" + "\n".join(lines) + f"\nc{length} = end\n"


class CycleTest(unittest.TestCase):
    def test_self_reference(self):
        with self.assertRaisesRegex(ConfigError, "cycle"):
            parse("[a]\nx = <${x}>\n").get("a", "x")

    def test_cycle_across_sections(self):
        config = parse("[a]\nx = ${b:y}\n[b]\ny = ${z}\nz = ${a:x}\n")
        with self.assertRaisesRegex(ConfigError, r"cycle.*a:x.*b:y.*b:z.*a:x"):
            config.get("a", "x")

    def test_unbounded_nesting(self):
        # Whether a fix resolves this or rejects it, it must not overflow the stack.
        try:
            value = parse(chain(3000)).get("c", "c0")
        except ConfigError:
            return
        self.assertEqual(value, "end")

    def test_ordinary_chains_still_resolve(self):
        self.assertEqual(parse(chain(10)).get("c", "c0"), "end")
        config = parse("[a]\nw = 1\ny = ${w}\nz = ${w}\nx = ${y}${z}${y}\n")
        self.assertEqual(config.get("a", "x"), "111")


class CommandLineTest(unittest.TestCase):
    def test_cycle_is_a_clean_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp, "loop.ini")
            path.write_text("[a]\nx = ${y}\ny = ${x}\n")
            result = subprocess.run(
                [sys.executable, "-m", "cfgparse", str(path)],
                cwd=SOURCE,
                capture_output=True,
                text=True,
                timeout=30,
            )
        # Report only the verdict, not the program's output.
        self.assertEqual(result.returncode, 2, "expected exit status 2")
        self.assertEqual(result.stdout, "", "expected no output")
        self.assertNotIn("Traceback", result.stderr, "expected no traceback")
        self.assertRegex(result.stderr, r"^cfgparse: error: .*cycle", "expected an error message")


if __name__ == "__main__":
    unittest.main()
