#!/usr/bin/env bash
# Lint, type-check and run the whole test suite in the project venv.
set -euo pipefail
source "$(dirname "$0")/venv.sh"
cd "$root"
ruff check .
ruff format --check .
bash scripts/typecheck.sh
exec pytest "$@"
