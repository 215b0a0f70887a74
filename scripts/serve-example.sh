#!/usr/bin/env bash
# Serves test_patch on the bundled C example at http://127.0.0.1:3000/mcp (difficulty from
# SSE_DIFFICULTY, default 2). The example's tree is copied to a scratch folder first, so
# builds and patches never touch the checkout.
source "$(dirname "$0")/venv.sh"
work="$(mktemp -d -t ssebench-example-XXXXXX)"
cp -r "$root/examples/c-rle" "$work/"
echo "ssebench: the agent's tree is $work/c-rle/src (apply examples/c-rle/fix.patch there to see every check pass)" >&2
exec ssebench serve --task "$work/c-rle" "$@"
