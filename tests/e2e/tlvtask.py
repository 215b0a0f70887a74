"""A small task of our own for the importers' tests: c-tlv, a type-length-value reader whose
records overflow a stack buffer (a libFuzzer-style harness: it exits 0 whatever its input,
unless the sanitizer stops it), with its fix and a PoC. Its build is OSS-Fuzz's kind: a
build.sh run in the project's folder by `compile`, which writes the harness to $OUT."""

from __future__ import annotations

import difflib
import struct

TLV_C = r"""/* A type-length-value reader: the harness reads one file and walks its records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct record {
	unsigned char type;
	unsigned char length;
	char value[16];
};

static int parse(const unsigned char *data, size_t size)
{
	size_t pos = 0;
	int records = 0;

	while (pos + 2 <= size) {
		struct record r;

		r.type = data[pos];
		r.length = data[pos + 1];
		pos += 2;
		if (r.length > size - pos)
			return -1;
		memcpy(r.value, data + pos, r.length);
		pos += r.length;
		records += r.type != 0;
	}
	return records;
}

int main(int argc, char **argv)
{
	unsigned char data[4096];
	size_t size;
	FILE *file;

	if (argc != 2 || !(file = fopen(argv[1], "rb")))
		return 0;
	size = fread(data, 1, sizeof data, file);
	fclose(file);
	printf("%d records\n", parse(data, size));
	return 0;
}
"""

FIXED_C = TLV_C.replace(
    "if (r.length > size - pos)", "if (r.length > size - pos || r.length > sizeof r.value)"
)
FIX = "".join(
    difflib.unified_diff(
        TLV_C.splitlines(keepends=True), FIXED_C.splitlines(keepends=True), "a/tlv.c", "b/tlv.c"
    )
)

# One record of 40 bytes: 24 past the 16 the record holds.
POC = struct.pack("BB", 1, 40) + b"A" * 40

# OSS-Fuzz's contract: `compile` runs this in the project's folder; it writes the harness to
# $OUT. The build may not read the PoC: it says so, and fails, if it can.
BUILD_SH = """\
#!/bin/bash -eu
echo "building in $PWD"
for secret in /tmp/poc "$SSE_TASK_DIR"/fix.patch "$SSE_TASK_DIR"/*.json; do
    if cat "$secret" >/dev/null 2>&1; then echo "the build could read $secret"; exit 1; fi
done
$CC $CFLAGS -fsanitize=address tlv.c -o "$OUT/tlv_fuzzer"
"""
