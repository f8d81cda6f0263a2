#!/usr/bin/env bash
# The whole test suite: lint, types, and every test (real compiler, real processes).
set -euo pipefail
# the system programs the tests drive (qemu-user, Neovim, Slurm, tmux, ...): installed as root,
# or named in one line with the command that installs them
bash "$(dirname "${BASH_SOURCE[0]}")/system-packages.sh"
# [bench]: PyTorch, for the test that loads an export into a PyTorch module (the CPU wheel)
. "$(dirname "${BASH_SOURCE[0]}")/venv.sh" .venv-test "[dev,bench]"
ruff check alpha_core alpha_cli alpha_lsp alpha_tui tests bench
ruff format --check alpha_core alpha_cli alpha_lsp alpha_tui tests bench
mypy
python -m alpha_core.query.refusal_docs --check
# the VS Code extension's npm packages (tests/test_editor_vscode.py): npm ci, reused when current
bash vscode-extension/scripts/deps.sh
bash vscode-extension/scripts/code-server.sh  # code-server for tests/test_editor_code_server.py: installed once, reused
# a worker per core (at most 4), each taking whole files (module fixtures are built once)
workers=$(python -c 'import os; print(max(1, min(4, len(os.sched_getaffinity(0)))))')
python -m pytest -q -p no:cacheprovider -n "$workers" --dist loadfile "$@"
