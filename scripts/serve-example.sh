#!/usr/bin/env bash
# Serves test_patch on the bundled C example at http://127.0.0.1:3000/mcp (difficulty from
# SSE_DIFFICULTY, default 2) until Ctrl-C. The example's tree is copied to a scratch folder
# first, so builds and patches never touch the checkout; the folder is removed on the way out.
set -euo pipefail
source "$(dirname "$0")/venv.sh"
work="$(mktemp -d -t ssebench-example-XXXXXX)"
trap 'rm -rf "$work"' EXIT
cp -r "$root/examples/c-rle" "$work/"
echo "ssebench: the agent's tree is $work/c-rle/src (apply examples/c-rle/fix.patch there to see every check pass)" >&2
# Not exec: this shell stays to remove the folder. Ctrl-C reaches the server directly; a TERM
# sent to this script is passed on, and it waits until the server has stopped.
ssebench serve --task "$work/c-rle" "$@" &
server=$!
trap 'kill -TERM "$server" 2>/dev/null || true' INT TERM
# A trapped signal cuts `wait` short: wait until the server is gone, then take its own status.
while kill -0 "$server" 2>/dev/null; do
    wait "$server" || true
done
status=0
wait "$server" || status=$?
exit "$status"
