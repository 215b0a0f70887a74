#!/bin/sh
# Intent tests for the fix: the decoder checks every run against the declared size and against
# the end of the input, rejecting a bad run cleanly (exit status 2, "rle: corrupt input: ..." on
# stderr, nothing on stdout) instead of writing or reading past a buffer.
# Only a verdict per case is printed, never the program's own output.
set -u
RLE="${SSE_SOURCE_DIR:-.}/rle"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# expect NAME STATUS STDERR-PATTERN STDOUT: decode $tmp/NAME and check the result.
expect() {
	"$RLE" decode "$tmp/$1" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -ne "$2" ]; then
		echo "FAIL: $1: exit status $got, expected $2"
		fails=$((fails + 1))
	elif [ -n "$3" ] && ! grep -q "$3" "$tmp/err"; then
		echo "FAIL: $1: stderr does not match '$3'"
		fails=$((fails + 1))
	elif [ "$(cat "$tmp/out")" != "$4" ]; then
		echo "FAIL: $1: unexpected output"
		fails=$((fails + 1))
	else
		echo "ok: $1"
	fi
}

# Header: "RLE1" and the decoded size as 4 little-endian bytes (octal escapes for dash's printf).
# A repeat run (op \202 = 5 times) one byte longer than the declared size of 4.
printf 'RLE1\004\000\000\000\202x' >"$tmp/repeat-overrun"
expect repeat-overrun 2 'corrupt input: run goes past the declared size' ''

# A literal run (op \002 = 3 bytes) one byte longer than the declared size of 2.
printf 'RLE1\002\000\000\000\002abc' >"$tmp/literal-overrun"
expect literal-overrun 2 'corrupt input: run goes past the declared size' ''

# A literal run of 10 bytes with only 3 left in the input.
printf 'RLE1\012\000\000\000\011abc' >"$tmp/literal-truncated"
expect literal-truncated 2 'corrupt input: truncated input' ''

# A repeat run whose value byte is missing.
printf 'RLE1\003\000\000\000\200' >"$tmp/repeat-truncated"
expect repeat-truncated 2 'corrupt input: truncated input' ''

# Runs that fill the declared size exactly are still fine.
printf 'RLE1\007\000\000\000\001ab\202c' >"$tmp/exact-fit"
expect exact-fit 0 '' 'abccccc'

[ "$fails" -eq 0 ] || { echo "$fails intent test(s) failed"; exit 1; }
echo "all intent tests passed"
