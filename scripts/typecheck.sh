#!/usr/bin/env bash
# mypy --strict on core, daemon, evaluate, plugins and testing, as the package they install as; then
# the benchmarks, which call the package's inner APIs (checked, not strict: a renamed method
# would otherwise surface only when CI's smoke run of bench/ reaches it).
# The folders are mapped under `ssebench` by an import hook that mypy cannot follow, so a link
# farm (ssebench/core -> core, ...) shows mypy the installed layout; it lives in the venv.
set -euo pipefail
source "$(dirname "$0")/venv.sh"
farm="$venv/mypy-farm"
mkdir -p "$farm/ssebench"
for part in core daemon evaluate plugins testing; do
    ln -sfn "$root/$part" "$farm/ssebench/$part"
done
cd "$farm"
MYPYPATH="$farm" mypy --strict --config-file "$root/pyproject.toml" -p ssebench "$@"
MYPYPATH="$farm:$root/bench" exec mypy --check-untyped-defs --config-file "$root/pyproject.toml" \
    "$root"/bench/*.py
