# Sourced by the other scripts: a project venv in .venv with ssebench and its test tools installed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${SSEBENCH_VENV:-$root/.venv}"
stamp="$venv/.installed"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
# Reinstall only when pyproject.toml changed since the last install.
if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
    echo "ssebench: installing into $venv ..." >&2
    "$venv/bin/python" -m pip install -q --upgrade pip >&2
    "$venv/bin/python" -m pip install -q -e "$root[test]" >&2
    touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
