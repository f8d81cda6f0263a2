"""The held-out metric every N rounds (`alpha run --eval-every N`, the executable's
`--eval-every N`): `evaluated` events at rounds N, 2N, ..., kept in the run's holdout.csv; the
last equals the run's final held-out accuracy, and the parameters are the bits of a run without
it (the forward kernels never touch the step's). A plan is refused before anything is built:
its roles hold their parameters whole only at the end."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

from conftest import EXAMPLES, cli

DIGITS = str(EXAMPLES / "digits.alpha")


def test_the_held_out_metric_every_n_rounds_leaves_the_bits_alone(tmp_path: Path) -> None:
    plain = cli("run", DIGITS, "-o", str(tmp_path / "plain"), "--json")
    assert plain.returncode == 0, plain.stderr
    done = cli("run", DIGITS, "-o", str(tmp_path / "eval"), "--eval-every", "100", "--json")
    assert done.returncode == 0, done.stderr
    with (tmp_path / "eval" / "holdout.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["launch"], r["round"]) for r in rows] == [("1", "100"), ("1", "200"), ("1", "300")]
    first, last = float(rows[0]["holdout_accuracy"]), float(rows[-1]["holdout_accuracy"])
    [report] = json.loads(done.stdout)["roles"]
    [without] = json.loads(plain.stdout)["roles"]
    assert report["params_sha256"] == without["params_sha256"]
    assert last == report["holdout_accuracy"] and 0.5 < first <= 1.0
    events = (tmp_path / "eval" / "events" / "main.jsonl").read_text().splitlines()
    evaluated = [json.loads(e) for e in events if '"evaluated"' in e]
    assert [e["round"] for e in evaluated] == [100, 200, 300]
    assert all(e["holdout_rows"] == 297 for e in evaluated)


def test_a_plan_is_refused_before_building_and_its_roles_refuse_it(tmp_path: Path) -> None:
    out = tmp_path / "pair"
    done = cli("run", DIGITS, "--plan", "pair", "-o", str(out), "--eval-every", "10")
    assert done.returncode == 1 and "error[usage]: --eval-every 10" in done.stderr
    assert not out.exists()
    built = cli("build", DIGITS, "--plan", "pair", "-o", str(out))
    assert built.returncode == 0, built.stderr
    role = subprocess.run(
        [str(out / "worker-0"), "--eval-every", "10"], capture_output=True, text=True, timeout=60
    )
    assert role.returncode == 2
    refused = json.loads(role.stdout.splitlines()[-1])
    assert refused["name"] == "usage" and "single-process run" in refused["message"]
