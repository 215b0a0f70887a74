#!/usr/bin/env bash
# mypy --strict on core, daemon, plugins and testing, as the package they install as.
# The folders are mapped under `ssebench` by an import hook that mypy cannot follow, so a link
# farm (ssebench/core -> core, ...) shows mypy the installed layout; it lives in the venv.
set -euo pipefail
source "$(dirname "$0")/venv.sh"
farm="$venv/mypy-farm"
mkdir -p "$farm/ssebench"
for part in core daemon plugins testing; do
    ln -sfn "$root/$part" "$farm/ssebench/$part"
done
cd "$farm"
MYPYPATH="$farm" exec mypy --strict --config-file "$root/pyproject.toml" -p ssebench "$@"
