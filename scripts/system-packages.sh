#!/usr/bin/env bash
# Run by scripts/test.sh before anything else: make sure the system programs the tests drive are here.
# As root with apt-get, installs what is missing (once; later runs find them and do nothing).
# Otherwise stops at once with one line naming what is missing and the command that installs it.
set -euo pipefail

# program the tests run (or a file, by its absolute path) -> the Debian package that brings it
alpha_needs=(
  "qemu-aarch64 qemu-user"          # AArch64 executables run under emulation
  "file file"                       # checks that executables are static
  "nvim neovim"                     # Debian's Neovim 0.7: the old-API client of test_editor_nvim
  "ip iproute2"                     # network namespaces: test_multihost
  "slurmctld slurmctld"             # a real Slurm cluster of two slurmd nodes: test_deploy_slurm
  "slurmd slurmd"
  "sinfo slurm-client"
  "tmux tmux"                       # the real alpha-tui in 80x24 and 120x40 terminals
  "npm npm"                         # the VS Code extension's packages and build
  # tests/test_editor_code_server.py: the packaged extension in a real VS Code (code-server,
  # installed by vscode-extension/scripts/code-server.sh), driven by Playwright in Chromium
  "chromium chromium"               # the browser that shows code-server
  "make build-essential"            # code-server's native modules are built at npm install
  "g++ build-essential"
  "pkg-config pkg-config"
  # headers (an absolute path: a file the package brings, checked instead of a program)
  "/usr/include/krb5.h libkrb5-dev"
  "/usr/include/X11/Xlib.h libx11-dev"
  "/usr/include/X11/extensions/XKBfile.h libxkbfile-dev"
  "/usr/include/libsecret-1/libsecret/secret.h libsecret-1-dev"
)

alpha_missing=()
for pair in "${alpha_needs[@]}"; do
  read -r program package <<<"$pair"
  case "$program" in
    /*) [ -f "$program" ] && continue ;;  # a file the package installs (headers)
    *)
      found="$(command -v "$program" 2>/dev/null || true)"
      [ -n "$found" ] && [ -x "$found" ] && continue
      ;;
  esac
  case " ${alpha_missing[*]-} " in
    *" $package "*) ;;  # named once, however many of its files are missing
    *) alpha_missing+=("$package") ;;
  esac
done

if [ "${#alpha_missing[@]}" -gt 0 ]; then
  install_cmd="apt-get install -y --no-install-recommends ${alpha_missing[*]}"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing the system packages the tests need: ${alpha_missing[*]} ..." >&2
    export DEBIAN_FRONTEND=noninteractive
    log="$(mktemp)"
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${alpha_missing[@]}"; } >"$log" 2>&1; then
      cat "$log" >&2
      echo "scripts/test.sh: could not install ${alpha_missing[*]} (apt-get's output above)" >&2
      rm -f "$log"
      exit 3
    fi
    rm -f "$log"
  else
    echo "scripts/test.sh: missing system packages: ${alpha_missing[*]}; install them with: sudo $install_cmd" >&2
    exit 3
  fi
fi
