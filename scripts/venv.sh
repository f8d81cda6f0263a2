# Sourced by the scripts beside it: create (once) and activate a virtual environment.
# usage: . scripts/venv.sh DIR EXTRAS   — reinstalls only when pyproject.toml changes.
set -euo pipefail
venv_dir="$1"
extras="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
stamp="$root/$venv_dir/.alpha-stamp"
want="$(sha256sum "$root/pyproject.toml" | cut -d' ' -f1) $extras"
if [ ! -x "$root/$venv_dir/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setting up $venv_dir (once) ..." >&2
  python3 -m venv "$root/$venv_dir"
  "$root/$venv_dir/bin/python" -m pip install -q --upgrade pip >&2
  "$root/$venv_dir/bin/python" -m pip install -q -e "$root$extras" >&2
  echo "$want" > "$stamp"
fi
export PATH="$root/$venv_dir/bin:$PATH"
export ALPHA_CACHE_DIR="${ALPHA_CACHE_DIR:-$root/.alpha-cache}"
cd "$root"
