# Sourced by scripts/chorus and scripts/test: makes sure uv and the locked
# virtualenv exist. Needs only python3 (>= 3.11) with pip.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if command -v uv >/dev/null 2>&1; then
  UV=(uv)
else
  if ! python3 -m uv --version >/dev/null 2>&1; then
    echo "installing uv (the package manager chorus is locked with)..." >&2
    python3 -m pip install --quiet --disable-pip-version-check "uv>=0.5" >&2
  fi
  UV=(python3 -m uv)
fi
export UV_PYTHON="${UV_PYTHON:-python3}"
