"""Issue 26 items 2-4 end to end with the real compiler and executables: `alpha predict`
against a NumPy float32 forward pass of the same parameters, `alpha export` round-tripping each
tensor's bytes, fine-tuning with `load` from an export (identity with the file's digest, a run
that starts from its values), the tutorial's PyTorch recipe, and each malformed case refused by
name."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, program_of
from reference import F32, evaluate, train

from alpha_cli.main import main as alpha
from alpha_core.check.program import Program

SOURCE = """system first {
  data train: synthetic(rows: 512, features: 2, classes: 3, seed: 7, holdout: 128)
  batch 32 leaves 4
  param w1: f32[2, 16] = normal(0.0, 0.5, seed: 1)
  param b1: f32[16] = zeros
  param w2: f32[16, 3] = normal(0.0, 0.5, seed: 2)
  param b2: f32[3] = zeros
  fn model(x: f32[B, 2]) -> f32[B, 3] {
    let h = tanh(x @ w1 + b1)
    return h @ w2 + b2
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01)
  steps 40
}
"""
SHAPES = {"w1": (2, 16), "b1": (16,), "w2": (16, 3), "b2": (3,)}


def evaluate_forward(program: Program, params: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    """The float32 reference's forward pass (tests/reference.py): Alpha's own arithmetic."""
    root = program.forward_output if program.forward_output is not None else program.output
    return evaluate(program.model, [root], params, x, None, len(x), F32)[root]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = alpha(list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("predict")
    (work / "first.alpha").write_text(SOURCE)
    assert alpha(["run", str(work / "first.alpha"), "-o", str(work / "run1")]) == 0
    return work


def _params(work: Path) -> dict[str, np.ndarray]:
    flat = np.fromfile(work / "run1" / "first.params", dtype="<f4")
    out, at = {}, 0
    for name, shape in SHAPES.items():
        n = int(np.prod(shape))
        out[name] = flat[at : at + n].reshape(shape)
        at += n
    return out


def test_predict_equals_a_numpy_forward_pass(
    trained: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(21, 2)).astype(np.float32)  # not a multiple of the leaf size
    np.savetxt(trained / "new.csv", x, delimiter=",", fmt="%.9g")
    np.save(trained / "new.npy", x)
    src = str(trained / "first.alpha")
    params = str(trained / "run1" / "first.params")
    for given, out in (("new.csv", "p.csv"), ("new.npy", "p.npy")):
        code, _, err = cli(
            capsys,
            "predict",
            src,
            "--params",
            params,
            "--input",
            str(trained / given),
            "-o",
            str(trained / out),
        )
        assert code == 0, err
    t = _params(trained)
    logits = np.tanh(x @ t["w1"] + t["b1"]) @ t["w2"] + t["b2"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = e / e.sum(axis=1, keepdims=True)
    table = np.loadtxt(trained / "p.csv", delimiter=",", skiprows=1, dtype=np.float64)
    header = (trained / "p.csv").read_text().splitlines()[0]
    assert header == "class,p_0,p_1,p_2"
    assert (table[:, 0].astype(int) == logits.argmax(axis=1)).all()
    np.testing.assert_allclose(table[:, 1:], probs, rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(np.load(trained / "p.npy"), table[:, 1:].astype(np.float32))
    # the raw outputs of the executable's own mode: bit for bit the float32 reference's
    program = program_of(SOURCE, trained / "first.alpha")
    exe = trained / "run1" / "first"
    done = subprocess.run(
        [
            str(exe),
            "--params",
            params,
            "--predict",
            str(trained / "new.npy"),
            "--predict-out",
            str(trained / "raw.npy"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    raw = np.load(trained / "raw.npy")
    reference = evaluate_forward(program, [t[n] for n in SHAPES], x)
    assert raw.tobytes() == reference.astype(np.float32).tobytes()


def test_export_round_trips_each_tensor(trained: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from safetensors.numpy import load_file

    params = str(trained / "run1" / "first.params")
    t = _params(trained)
    for fmt in ("npz", "safetensors"):
        out = str(trained / f"first.{fmt}")
        code, text, err = cli(capsys, "export", params, "--format", fmt, "-o", out)
        assert code == 0, err
        assert "w1  f32[2, 16]" in text
        got = dict(np.load(out)) if fmt == "npz" else load_file(out)
        assert sorted(got) == sorted(SHAPES)  # safetensors keeps its keys sorted
        for name, v in t.items():
            assert got[name].dtype == np.float32 and got[name].shape == v.shape
            assert got[name].tobytes() == v.tobytes()
    # the source gives the names and shapes when no manifest is beside the file
    lone = trained / "lone" / "x.params"
    lone.parent.mkdir()
    lone.write_bytes((trained / "run1" / "first.params").read_bytes())
    code, _, err = cli(capsys, "export", str(lone), "--format", "npz", "-o", str(trained / "l.npz"))
    assert code == 1 and "error[export-layout-unknown]" in err
    code, _, err = cli(
        capsys,
        "export",
        str(lone),
        "--format",
        "npz",
        "-o",
        str(trained / "l.npz"),
        "--source",
        str(trained / "first.alpha"),
    )
    assert code == 0, err
    assert np.load(trained / "l.npz")["w2"].tobytes() == t["w2"].tobytes()


def test_fine_tuning_from_an_export(trained: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = trained / "first.safetensors"
    if not export.exists():
        assert (
            alpha(
                [
                    "export",
                    str(trained / "run1" / "first.params"),
                    "--format",
                    "safetensors",
                    "-o",
                    str(export),
                ]
            )
            == 0
        )
    tuned = SOURCE.replace(
        "normal(0.0, 0.5, seed: 1)", 'load("first.safetensors", key: "w1")'
    ).replace("= zeros\n  param w2", '= load("run1/first.params", key: "b1")\n  param w2')
    (trained / "tuned.alpha").write_text(tuned)
    program = program_of(tuned, trained / "tuned.alpha")
    digest = hashlib.sha256(export.read_bytes()).hexdigest()
    assert f"load sha256={digest} key='w1'" in program.canonical()
    t = _params(trained)
    w1 = program.params[0].init.loaded
    assert w1 is not None and w1.values == t["w1"].tobytes()
    # the run starts from those values: its parameters are the float32 reference's, trained
    # from the loaded tensors, bit for bit
    code, _, err = cli(capsys, "run", str(trained / "tuned.alpha"), "-o", str(trained / "run2"))
    assert code == 0, err
    after = (trained / "run2" / "first.params").read_bytes()
    assert hashlib.sha256(after).hexdigest() == train(program).sha256
    # a different file is a different system; a changed file changes the identity
    other = trained / "other.safetensors"
    from safetensors.numpy import save_file

    save_file({"w1": t["w1"] * np.float32(2)}, str(other))
    moved = program_of(tuned.replace("first.safetensors", "other.safetensors"), trained / "o.alpha")
    assert moved.identity() != program.identity()


def test_malformed_cases_are_refused_by_name(
    trained: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = str(trained / "first.alpha")
    params = str(trained / "run1" / "first.params")
    (trained / "bad.csv").write_text("0.5,1.0,2\n")
    (trained / "word.csv").write_text("0.5,abc\n")
    np.save(trained / "f64.npy", np.zeros((3, 2)))
    np.save(trained / "wide.npy", np.zeros((3, 5), dtype=np.float32))
    (trained / "empty.csv").write_text("\n")
    cases = [
        (["--params", params, "--input", str(trained / "bad.csv")], "predict-input-malformed"),
        (["--params", params, "--input", str(trained / "word.csv")], "predict-input-malformed"),
        (["--params", params, "--input", str(trained / "f64.npy")], "predict-input-malformed"),
        (["--params", params, "--input", str(trained / "wide.npy")], "predict-input-malformed"),
        (["--params", params, "--input", str(trained / "empty.csv")], "predict-input-malformed"),
        (["--params", params, "--input", str(trained / "none.csv")], "predict-input-unreadable"),
        (["--params", src, "--input", str(trained / "bad.csv")], "params-file-mismatch"),
    ]
    for extra, name in cases:
        code, _, err = cli(capsys, "predict", src, *extra)
        assert code == 1 and f"error[{name}]" in err, (extra, err)
    # load: a missing file, a missing name, a wrong shape, not float32
    np.savez(trained / "w.npz", w1=np.zeros((2, 16), np.float32), w64=np.zeros((2, 16)))
    for init, name in (
        ('load("nope.npz", key: "w1")', "load-unreadable"),
        ('load("first.alpha", key: "w1")', "load-unreadable"),
        ('load("w.npz", key: "w9")', "unknown-name"),
        ('load("w.npz", key: "w64")', "type-mismatch"),
        ('load("run1/first.params", key: "w2")', "shape-mismatch"),
    ):
        (trained / "bad.alpha").write_text(SOURCE.replace("normal(0.0, 0.5, seed: 1)", init))
        code, out, _ = cli(capsys, "check", str(trained / "bad.alpha"), "--json")
        assert code == 1
        assert [r["name"] for r in json.loads(out)["refusals"]] == [name], init


def test_the_tutorials_pytorch_recipe(trained: Path) -> None:
    """The tutorial's recipe, run by an interpreter that has PyTorch: the tests' own (the
    README's test command installs the `bench` extra into .venv-test), or ALPHA_TORCH_PYTHON."""
    python = os.environ.get("ALPHA_TORCH_PYTHON") or sys.executable
    has_torch = subprocess.run([python, "-c", "import torch"], capture_output=True).returncode
    assert has_torch == 0, (
        f"{python} has no PyTorch: the README's test command installs it (the `bench` extra); "
        "or point ALPHA_TORCH_PYTHON at an interpreter that has it"
    )
    text = (ROOT / "docs" / "tutorial.md").read_text()
    recipe = re.search(r"<!-- torch recipe -->\n```python\n(.*?)```", text, re.S)
    assert recipe is not None
    export = trained / "first.npz"
    if not export.exists():
        assert (
            alpha(
                [
                    "export",
                    str(trained / "run1" / "first.params"),
                    "--format",
                    "npz",
                    "-o",
                    str(export),
                ]
            )
            == 0
        )
    done = subprocess.run(
        [python, "-c", recipe.group(1)],
        cwd=trained,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    torch_logits = np.array(json.loads(done.stdout.strip().splitlines()[-1]), dtype=np.float32)
    t = _params(trained)
    x = np.array([[0.5, -1.0], [2.0, 0.25]], dtype=np.float32)  # the recipe's rows
    logits = np.tanh(x @ t["w1"] + t["b1"]) @ t["w2"] + t["b2"]
    np.testing.assert_allclose(torch_logits, logits, rtol=1e-5, atol=1e-6)


def test_a_gpu_role_of_a_system_that_loads_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GPU roles draw their initial values on the device and cannot copy loaded ones yet: the
    pairing is refused `unsupported-on-target` at check time (it ended in internal-error)."""
    np.savez(tmp_path / "w.npz", w=np.ones((4, 3), np.float32))
    source = f"""system tiny {{
  data train: synthetic(rows: 64, features: 4, classes: 3, seed: 1)
  batch 8 leaves 2
  param w: f32[4, 3] = load("{tmp_path / "w.npz"}", key: "w")
  param b: f32[3] = zeros
  fn model(x: f32[B, 4]) -> f32[B, 3] {{
    return x @ w + b
  }}
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 10
}}
plan duo for tiny {{
  roles worker[2]
  topology pair
}}
pairing cards for duo {{
  worker[*]: host x86_64, gpu h200
}}
"""
    (tmp_path / "gpu.alpha").write_text(source)
    code, out, _ = cli(capsys, "check", str(tmp_path / "gpu.alpha"), "--json")
    assert code == 1
    [refusal] = json.loads(out)["refusals"]
    assert (
        refusal["name"] == "unsupported-on-target"
        and "`w` starts from `load(...)`" in (refusal["message"])
    )
