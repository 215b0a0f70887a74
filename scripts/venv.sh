# A project venv in .venv (or $SSEBENCH_VENV) with ssebench and its test tools installed, first
# on PATH. Sourced by the other scripts, and safe to source in an interactive shell: it sets no
# shell option, and a failure returns non-zero instead of closing the terminal.
# Prerequisite: python3 3.11 or newer (it installs ssebench, not Python).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${SSEBENCH_VENV:-$root/.venv}"

_ssebench_venv() {
    local stamp="$venv/.installed"
    if [ ! -x "$venv/bin/python" ]; then
        if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "ssebench: needs python3 3.11 or newer on PATH (found: $(python3 --version 2>&1))" >&2
            return 1
        fi
        python3 -m venv "$venv" || return 1
    fi
    # Reinstall only when pyproject.toml changed since the last install.
    if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
        echo "ssebench: installing into $venv ..." >&2
        "$venv/bin/python" -m pip install -q --upgrade pip >&2 || return 1
        "$venv/bin/python" -m pip install -q -e "$root[test]" >&2 || return 1
        touch "$stamp"
    fi
    case ":$PATH:" in
        *":$venv/bin:"*) ;;
        *) export PATH="$venv/bin:$PATH" ;;
    esac
}

_ssebench_venv
