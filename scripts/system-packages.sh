#!/usr/bin/env bash
# Run by scripts/test.sh before anything else: make sure the system programs the tests drive are here.
# As root with apt-get, installs what is missing (once; later runs find them and do nothing).
# Otherwise stops at once with one line naming what is missing and the command that installs it.
set -euo pipefail

# program the tests run -> the Debian package that brings it
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
)

alpha_missing=()
for pair in "${alpha_needs[@]}"; do
  read -r program package <<<"$pair"
  found="$(command -v "$program" 2>/dev/null || true)"
  if [ -z "$found" ] || [ ! -x "$found" ]; then
    alpha_missing+=("$package")
  fi
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
