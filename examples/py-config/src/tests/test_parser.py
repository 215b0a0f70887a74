"""The project's own tests: parsing, references, and the command line."""

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from cfgparse import ConfigError, parse

SOURCE = Path(__file__).resolve().parent.parent

SAMPLE = """
# a comment
; another comment
[server]
host = example.org
port=8080
url = http://${host}:${port}/

[client]
endpoint = ${server:url}api
price = $$5
"""


class ParseTest(unittest.TestCase):
    def test_sections_and_options(self):
        config = parse(SAMPLE)
        self.assertEqual(config.sections(), ["server", "client"])
        self.assertEqual(config.options("server"), ["host", "port", "url"])
        self.assertEqual(config.raw("server", "url"), "http://${host}:${port}/")

    def test_references(self):
        config = parse(SAMPLE)
        self.assertEqual(config.get("server", "url"), "http://example.org:8080/")
        self.assertEqual(config.get("client", "endpoint"), "http://example.org:8080/api")
        self.assertEqual(config.get("client", "price"), "$5")

    def test_forward_reference(self):
        config = parse("[a]\nx = ${y}!\ny = why\n")
        self.assertEqual(config.get("a", "x"), "why!")

    def test_repeated_reference_is_not_a_cycle(self):
        config = parse("[a]\nx = 1\ny = ${x}${x}\nz = ${y}-${x}\n")
        self.assertEqual(config.get("a", "z"), "11-1")

    def test_later_value_wins(self):
        self.assertEqual(parse("[a]\nx = 1\n[a]\nx = 2\n").get("a", "x"), "2")

    def test_missing_reference(self):
        with self.assertRaisesRegex(ConfigError, "no such option: a:nope"):
            parse("[a]\nx = ${nope}\n").get("a", "x")

    def test_malformed(self):
        with self.assertRaisesRegex(ConfigError, "line 2: cannot parse"):
            parse("[a]\njust words\n")
        with self.assertRaisesRegex(ConfigError, "line 1: option outside any section"):
            parse("x = 1\n")


class CommandLineTest(unittest.TestCase):
    def run_cli(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".ini", delete=False) as file:
            file.write(text)
        try:
            return subprocess.run(
                [sys.executable, "-m", "cfgparse", file.name],
                cwd=SOURCE, capture_output=True, text=True, timeout=30,
            )
        finally:
            Path(file.name).unlink()

    def test_prints_resolved_values(self):
        result = self.run_cli(SAMPLE)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("client.endpoint = http://example.org:8080/api\n", result.stdout)

    def test_invalid_file(self):
        result = self.run_cli("[a]\nx = ${missing}\n")
        self.assertEqual(result.returncode, 2)
        self.assertEqual(result.stdout, "")
        self.assertIn("cfgparse: error: no such option", result.stderr)


if __name__ == "__main__":
    unittest.main()
