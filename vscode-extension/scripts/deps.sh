#!/usr/bin/env bash
# Installs the extension's npm dependencies from package-lock.json (npm ci) unless node_modules
# already holds exactly that lock file's packages. Used by scripts/test.sh and the editor tests.
#
# The install scripts of esbuild (which puts its platform binary in place) and @vscode/vsce-sign
# are approved in package.json's `allowScripts`: npm 11 warns about unreviewed install scripts
# and skips them under strict-allow-scripts (and by default in later versions). esbuild works
# either way (its bin/esbuild falls back to a JavaScript launcher); the check below makes a
# broken install fail here, not at `npm run bundle`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
want="$(sha256sum package.json package-lock.json | sha256sum | cut -d' ' -f1)"
if [ -f node_modules/.alpha-lock-sha256 ] && [ "$(cat node_modules/.alpha-lock-sha256)" = "$want" ]; then
  exit 0
fi
echo "vscode-extension: npm ci ..." >&2
npm ci --no-audit --no-fund --loglevel=error >&2
node_modules/.bin/esbuild --version >/dev/null
echo "$want" > node_modules/.alpha-lock-sha256
