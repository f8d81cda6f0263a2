"""The jobs around a training run, end to end with the real `alpha` command, as the tutorial
does them (issue 26): train on NumPy images (`npz`), predict on new rows, export to safetensors,
load the export into the equivalent PyTorch module and get the same predictions, fine-tune from
the export with `load(...)`, compare the two runs with `alpha runs`; and train a sequence model
on a token file made from a text of the repository's own (examples/data/keeper.txt)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES, cli

IMAGES = """system glyphs {{
  data train: npz("{data}", classes: 10, holdout: 297)
  batch 64 leaves 8 shuffle(seed: 7)
  param w1: f32[64, 32] = {w1}
  param b1: f32[32] = {b1}
  param w2: f32[32, 10] = {w2}
  param b2: f32[10] = {b2}
  fn model(x: f32[B, 64]) -> f32[B, 10] {{
    let h = relu((x / 16.0) @ w1 + b1)
    return h @ w2 + b2
  }}
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: {lr}, beta1: 0.9, beta2: 0.999, eps: 1e-8)
  steps {steps}
}}
"""
FRESH = {
    "w1": "normal(0.0, 0.1, seed: 1)",
    "b1": "zeros",
    "w2": "normal(0.0, 0.1, seed: 2)",
    "b2": "zeros",
}
LENGTH = 16  # tokens a window of the sequence model reads
TEXT = """system keeper {{
  data train: tokens("{data}", length: {length}, tokens: 256, holdout: 8)
  batch 16 leaves 4 shuffle(seed: 3)
  param e: f32[256, 32] = normal(0.0, 0.1, seed: 1)
  param w: f32[32, 256] = normal(0.0, 0.1, seed: 2)
  param b: f32[256] = zeros
  fn model(x: f32[B, {length}]) -> f32[B, {length}, 256] {{
    return tanh(embed(e, x)) @ w + b
  }}
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8)
  steps 60
}}
"""


def alpha(*args: str) -> str:
    done = cli(*args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def losses(run: Path) -> list[float]:
    with (run / "metrics.csv").open() as f:
        return [float(row["loss"]) for row in csv.DictReader(f)]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("jobs")
    shutil.copy(EXAMPLES / "data" / "digits.npz", folder / "digits.npz")
    first = IMAGES.format(data=folder / "digits.npz", lr=0.01, steps=200, **FRESH)
    (folder / "first.alpha").write_text(first)
    alpha("run", str(folder / "first.alpha"), "-o", str(folder / "runs" / "first"))
    return folder


def test_predict_export_and_the_same_predictions_in_pytorch(work: Path) -> None:
    import torch  # the README's test command installs it (the bench extra)
    from safetensors.numpy import load_file

    # new rows: held-out images the run never trained on, as a float32 array of features
    images = np.load(work / "digits.npz")["x"][1500:1540].reshape(40, 64).astype(np.float32)
    np.save(work / "new.npy", images)
    params = work / "runs" / "first" / "glyphs.params"
    alpha(
        "predict",
        str(work / "first.alpha"),
        "--params",
        str(params),
        "--input",
        str(work / "new.npy"),
        "-o",
        str(work / "predicted.csv"),
    )
    with (work / "predicted.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 40
    classes = np.array([int(r["class"]) for r in rows])
    probabilities = np.array([[float(r[f"p_{j}"]) for j in range(10)] for r in rows])

    alpha("export", str(params), "--format", "safetensors", "-o", str(work / "first.safetensors"))
    tensors = load_file(str(work / "first.safetensors"))
    assert {k: v.shape for k, v in tensors.items()} == {
        "w1": (64, 32),
        "b1": (32,),
        "w2": (32, 10),
        "b2": (10,),
    }
    # the equivalent PyTorch module: nn.Linear keeps its weight as (out, in), Alpha's w as
    # (in, out), so each weight goes in transposed
    hidden, out = torch.nn.Linear(64, 32), torch.nn.Linear(32, 10)
    module = torch.nn.Sequential(hidden, torch.nn.ReLU(), out, torch.nn.Softmax(-1))
    with torch.no_grad():
        hidden.weight.copy_(torch.from_numpy(tensors["w1"].T.copy()))
        hidden.bias.copy_(torch.from_numpy(tensors["b1"]))
        out.weight.copy_(torch.from_numpy(tensors["w2"].T.copy()))
        out.bias.copy_(torch.from_numpy(tensors["b2"]))
        theirs = module(torch.from_numpy(images) / 16.0).numpy()
    np.testing.assert_allclose(probabilities, theirs, rtol=1e-5, atol=1e-6)
    assert (classes == theirs.argmax(axis=1)).all()
    accuracy = (classes == np.load(work / "digits.npz")["y"][1500:1540]).mean()
    assert accuracy > 0.8, accuracy


def test_fine_tuning_from_the_export_and_comparing_the_runs(work: Path) -> None:
    if not (work / "first.safetensors").exists():
        params = work / "runs" / "first" / "glyphs.params"
        alpha(
            "export", str(params), "--format", "safetensors", "-o", str(work / "first.safetensors")
        )
    loaded = {k: f'load("{work / "first.safetensors"}", key: "{k}")' for k in FRESH}
    second = IMAGES.format(data=work / "digits.npz", lr=0.001, steps=50, **loaded)
    (work / "second.alpha").write_text(second)
    alpha("run", str(work / "second.alpha"), "-o", str(work / "runs" / "second"))
    first, tuned = losses(work / "runs" / "first"), losses(work / "runs" / "second")
    # the second run starts where the first ended, not from random weights
    assert tuned[0] < first[0] / 4, (first[0], tuned[0])
    listed = json.loads(alpha("runs", "--dir", str(work / "runs"), "--json"))
    assert [Path(r["folder"]).name for r in listed["runs"]] == ["second", "first"]
    compared = json.loads(
        alpha("runs", "--dir", str(work / "runs"), "compare", "first", "second", "--json")
    )
    said = "\n".join(compared["differences"])
    assert "steps: 200 → 50" in said and "load" in said, said
    assert compared["same_parameters"] is False


def test_a_sequence_model_learns_from_a_token_file(work: Path) -> None:
    """The repository's own short story as UTF-8 bytes, one uint16 token each."""
    text = (EXAMPLES / "data" / "keeper.txt").read_bytes()
    np.frombuffer(text, dtype=np.uint8).astype("<u2").tofile(work / "keeper.u16")
    (work / "keeper.alpha").write_text(TEXT.format(data=work / "keeper.u16", length=LENGTH))
    report = json.loads(
        alpha("run", str(work / "keeper.alpha"), "-o", str(work / "runs" / "keeper"), "--json")
    )
    assert report["ok"] is True, report
    curve = [loss / LENGTH for loss in losses(work / "runs" / "keeper")]  # a window's sum
    assert len(curve) == 60
    # per position, from about ln 256 = 5.5 to well below it: English bytes are predictable
    assert curve[0] > 5.0 and np.mean(curve[-10:]) < 3.5, (curve[0], curve[-10:])
