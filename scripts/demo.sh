#!/usr/bin/env bash
# The main job: build examples/digits.alpha into a static executable, train it with progress,
# and print the final loss, held-out accuracy and the SHA-256 of the final parameters.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/venv.sh" .venv ""
echo "alpha: building and training examples/digits.alpha (the first build compiles musl: ~1 min)" >&2
alpha check examples/digits.alpha
alpha run examples/digits.alpha -o build/digits "$@"
