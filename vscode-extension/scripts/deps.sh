#!/usr/bin/env bash
# Installs the extension's npm dependencies from package-lock.json (npm ci) unless node_modules
# already holds exactly that lock file's packages. Used by scripts/test.sh and the editor tests.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ -f node_modules/.alpha-lock-sha256 ] && [ "$(cat node_modules/.alpha-lock-sha256)" = "$want" ]; then
  exit 0
fi
echo "vscode-extension: npm ci ..." >&2
npm ci --no-audit --no-fund --loglevel=error >&2
echo "$want" > node_modules/.alpha-lock-sha256
