"""A role's memory stays within what admission counted for it (issue 10, fewer passes over
memory): one copy of the parameters and of the learner state, updated in place by the round,
not a committed copy and a staged one copied into each other every round."""

from __future__ import annotations

import json
import resource
import subprocess
from pathlib import Path

from conftest import cli

# 1,010,000 parameters and Adam (two state floats per parameter): a second copy of both would
# be 12 MB, more than the slack between the role's working set and its admitted demand.
ADAM = """system wide {
  data train: synthetic(rows: 16, features: 1000, classes: 10, seed: 1, holdout: 8)
  batch 8 leaves 2
  param w: f32[1000, 1000] = normal(0.0, 0.01, seed: 1)
  param v: f32[1000, 10] = normal(0.0, 0.01, seed: 2)
  fn model(x: f32[B, 1000]) -> f32[B, 10] {
    return relu(x @ w) @ v
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.001, beta1: 0.9, beta2: 0.999, eps: 1e-8)
  steps 3
}
"""


def test_a_role_runs_within_its_admitted_demand(tmp_path: Path) -> None:
    """Under an address-space limit of exactly the demand its build admitted (parameters and
    learner state once, the pieces, kernel buffers, data, a reserve), the role trains to the
    end. Holding a committed and a staged copy of both, as it once did, it needed about 12 MB
    more and was refused out-of-memory."""
    source = tmp_path / "wide.alpha"
    source.write_text(ADAM)
    built = cli("build", str(source), "-o", str(tmp_path / "b"), "--json")
    assert built.returncode == 0, built.stderr
    exe = json.loads(built.stdout)["executables"][0]
    demand = int(exe["demand"])

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (demand, demand))

    # One thread: the kernels' per-thread scratch is not what this test is about.
    cmd = [exe["path"], "--quiet", "--threads", "1", "--params-out", str(tmp_path / "p")]
    run = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=limit, timeout=120)
    assert run.returncode == 0, (demand, run.stdout[-400:], run.stderr)
    done = json.loads(run.stdout.splitlines()[-1])
    assert done["event"] == "done" and (tmp_path / "p").is_file(), done
