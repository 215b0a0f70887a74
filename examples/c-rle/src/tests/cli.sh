#!/bin/sh
# Command-line tests: round trips through files, and the exit status for bad input.
set -u
RLE=./rle
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() { echo "cli.sh: FAIL: $*" >&2; fails=$((fails + 1)); }

# Round trips of a few kinds of data.
printf 'hello, world\n' >"$tmp/text"
head -c 1000 /dev/zero >"$tmp/zeros"
cat rle.c rle.h main.c >"$tmp/source"
printf '' >"$tmp/empty"
for f in text zeros source empty; do
	"$RLE" encode "$tmp/$f" >"$tmp/$f.rle" || fail "encode $f"
	"$RLE" decode "$tmp/$f.rle" >"$tmp/$f.out" || fail "decode $f"
	cmp -s "$tmp/$f" "$tmp/$f.out" || fail "round trip $f"
done

# 1000 zeros compress to 8 repeat runs (7 of 130 and one of 90), 2 bytes each, plus the header.
size=$(wc -c <"$tmp/zeros.rle")
[ "$size" -eq $((8 + 8 * 2)) ] || fail "zeros encoded to $size bytes"

# Bad input: exit 2 and a message, no output.
printf 'NOPE\000\000\000\000' >"$tmp/bad"
"$RLE" decode "$tmp/bad" >"$tmp/bad.out" 2>"$tmp/bad.err"
[ $? -eq 2 ] || fail "bad magic: exit status"
grep -q 'corrupt input: bad magic' "$tmp/bad.err" || fail "bad magic: message"
[ ! -s "$tmp/bad.out" ] || fail "bad magic: output written"

# Usage errors and a missing file: exit 1.
"$RLE" 2>/dev/null; [ $? -eq 1 ] || fail "no arguments: exit status"
"$RLE" decode "$tmp/missing" 2>/dev/null; [ $? -eq 1 ] || fail "missing file: exit status"

[ "$fails" -eq 0 ] || exit 1
echo "cli.sh: all tests passed"
