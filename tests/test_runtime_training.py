"""End to end exactness: the executable built from the linear fixture kernels trains to exactly
the bits of a NumPy float32 reference that follows the same specification (batch_reference,
lower.tree, the operation order of tests/fixtures/runtime/linear_kernels.c)."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from alpha_core.link import compile_c, link_executable
from alpha_core.link.batch_reference import example_rows
from alpha_core.link.toolchain import runtime_dir
from alpha_core.lower.tree import tree_combine

TARGET = "x86_64-linux-musl"
FIXTURES = Path(__file__).parent / "fixtures" / "runtime"
f32 = np.float32


# ---- the reference: linear_kernels.c, one float32 operation at a time -------------------------


def exp_nonpositive(x: np.float32) -> np.float32:
    if x < f32(-87.0):
        return f32(0.0)
    n = int(x * f32(1.44269504) - f32(0.5))  # int() truncates toward zero, like the C cast
    nf = f32(n)
    r = x - nf * f32(0.693145751953125)
    r = r - nf * f32(1.42860677e-06)
    p = f32(1.38888888e-03)
    for c in (8.33333377e-03, 4.16666679e-02, 1.66666672e-01, 0.5, 1.0, 1.0):
        p = p * r + f32(c)
    return p * np.uint32((n + 127) << 23).view(np.float32)


def log_at_least_one(x: np.float32) -> np.float32:
    bits = int(f32(x).view(np.uint32))
    e = (bits >> 23) - 127
    m = np.uint32((bits & 0x7FFFFF) | 0x3F800000).view(np.float32)
    if m > f32(1.41421354):
        m = m * f32(0.5)
        e = e + 1
    f = (m - f32(1.0)) / (m + f32(1.0))
    f2 = f * f
    q = f32(0.111111112)
    for c in (0.142857149, 0.200000003, 0.333333343, 1.0):
        q = q * f2 + f32(c)
    return f32(e) * f32(0.693147182) + (f32(2.0) * f) * q


class LinearReference:
    def __init__(self, features: int, outputs: int, batch: int, classes: bool) -> None:
        self.features, self.outputs, self.batch, self.classes = features, outputs, batch, classes
        self.n = features * outputs + outputs
        h = (np.arange(self.n, dtype=np.uint64) * 2654435761) & 0xFFFFFFFF
        self.params: np.ndarray = ((h % 2001).astype(np.int64) - 1000).astype(np.float32) * f32(
            1.0e-4
        )
        self.state: np.ndarray = np.zeros(self.n, dtype=np.float32)

    def linear(self, x: np.ndarray) -> list[np.float32]:
        w, b = (
            self.params[: self.features * self.outputs],
            self.params[self.features * self.outputs :],
        )
        z = []
        for k in range(self.outputs):
            s = b[k]
            for j in range(self.features):
                s = s + x[j] * w[j * self.outputs + k]
            z.append(s)
        return z

    def leaf_grad(self, xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.float32]:
        grad = np.zeros(self.n, dtype=np.float32)
        total = f32(0)
        for xe, ye in zip(xs, ys, strict=True):
            z = self.linear(xe)
            if self.classes:
                y = int(ye)
                m = z[0]
                for k in range(1, self.outputs):
                    if z[k] > m:
                        m = z[k]
                d = [exp_nonpositive(zk - m) for zk in z]
                s = f32(0)
                for dk in d:
                    s = s + dk
                d = [d[k] / s - (f32(1.0) if k == y else f32(0.0)) for k in range(self.outputs)]
                loss = log_at_least_one(s) - (z[y] - m)
            else:
                d = [z[k] - ye[k] for k in range(self.outputs)]
                loss = f32(0)
                for dk in d:
                    loss = loss + f32(0.5) * (dk * dk)
            for k in range(self.outputs):
                for j in range(self.features):
                    i = j * self.outputs + k
                    grad[i] = grad[i] + xe[j] * d[k]
                i = self.features * self.outputs + k
                grad[i] = grad[i] + d[k]
            total = total + loss
        return grad, total

    def apply(self, grad_sum: np.ndarray) -> None:
        g = grad_sum / f32(self.batch)
        self.state = f32(0.9) * self.state + g
        self.params = self.params - f32(0.5) * self.state


def reference_run(
    x: np.ndarray, y: np.ndarray, fields: dict[str, int], steps: int, classes: bool
) -> tuple[list[str], bytes, float]:
    """(every round's loss bits, the parameter file, the holdout metric)."""
    model = LinearReference(x.shape[1], fields["outputs"], fields["batch"], classes)
    batch_fields = {
        k: fields[k] for k in ("rows", "holdout", "batch", "leaves", "shuffle", "shuffle_seed")
    }
    losses = []
    for t in range(steps):
        results = []
        for leaf in range(fields["leaves"]):
            rows = example_rows(**batch_fields, t=t, leaf=leaf)
            results.append(model.leaf_grad(x[rows], y[rows]))
        grad = tree_combine([g for g, _ in results], lambda a, b: a + b)
        loss = tree_combine([v for _, v in results], lambda a, b: a + b) / f32(fields["batch"])
        model.apply(grad)
        losses.append(f"{int(loss.view(np.uint32)):08x}")
    first = fields["rows"] - fields["holdout"]
    total = 0.0
    for r in range(first, fields["rows"]):
        z = model.linear(x[r])
        if classes:
            total += float(int(np.argmax(z)) == int(y[r]))
        else:
            for k in range(fields["outputs"]):
                e = float(z[k]) - float(y[r][k])
                total += e * e
    metric = (
        total / fields["holdout"] if classes else total / (fields["holdout"] * fields["outputs"])
    )
    return losses, model.params.astype("<f4").tobytes(), metric


# ---- building and running the executable ------------------------------------------------------


def build(folder: Path, fields: dict[str, object]) -> Path:
    text = (FIXTURES / "program.c.in").read_text()
    for key, value in fields.items():
        text = text.replace(f"@{key}@", str(value))
    assert "@" not in text.split("*/", 1)[1]
    obj = folder / "linear.o"
    compile_c(TARGET, "linear_kernels.c", obj, cwd=FIXTURES, include_dirs=[runtime_dir()])
    return link_executable(TARGET, obj.read_bytes(), text, folder / "role")


def run(exe: Path, params: Path) -> list[dict[str, object]]:
    done = subprocess.run(
        [str(exe), "--params-out", str(params)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def c_floats(values: np.ndarray) -> str:
    return ", ".join(f"{float(v).hex()}f" for v in values.ravel())


@pytest.mark.parametrize(("leaves", "leaf_size"), [(3, 4), (5, 2), (1, 8)])
def test_class_training_matches_the_numpy_reference(
    tmp_path: Path, leaves: int, leaf_size: int
) -> None:
    rng = np.random.default_rng(11)
    rows, holdout, steps, features, outputs = 50, 13, 15, 4, 3
    x = rng.normal(size=(rows, features)).astype(np.float32)
    y = ((x[:, 0] + x[:, 1] > 0).astype(int) + (x[:, 2] > 1)).astype(np.int64)
    lines = [
        ",".join([*(np.format_float_positional(v, unique=True) for v in row), str(c)])
        for row, c in zip(x, y, strict=True)
    ]
    data = tmp_path / "train.csv"
    data.write_text("\n".join(lines) + "\n")
    fields = {"rows": rows, "holdout": holdout, "batch": leaves * leaf_size, "leaves": leaves,
              "shuffle": 1, "shuffle_seed": 42, "outputs": outputs}  # fmt: skip
    exe = build(tmp_path, {
        "SYSTEM": "linear", "IDENTITY": "0" * 64, "N_PARAMS": features * outputs + outputs,
        "N_STATE": features * outputs + outputs, "BATCH": leaves * leaf_size, "LEAVES": leaves,
        "LEAF_SIZE": leaf_size, "STEPS": steps, "FEATURES": features, "OUTPUTS": outputs,
        "LABEL_KIND": 0, "SHUFFLE": 1, "SHUFFLE_SEED": 42, "DATA_KIND": 0, "DATA_PATH": data,
        "DATA_SHA256": hashlib.sha256(data.read_bytes()).hexdigest(), "ROWS": rows,
        "HOLDOUT": holdout, "EMBEDDED_DEFINITIONS": "", "EMBEDDED_X": "NULL", "EMBEDDED_Y": "NULL",
    })  # fmt: skip
    events = run(exe, tmp_path / "params")
    losses, params, accuracy = reference_run(x, y, fields, steps, classes=True)
    assert [e["loss_bits"] for e in events if e["event"] == "step"] == losses
    assert (tmp_path / "params").read_bytes() == params
    assert events[-1]["holdout_accuracy"] == float(f"{accuracy:.9g}")


def test_regression_on_embedded_data_matches_the_numpy_reference(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    rows, holdout, steps, features, outputs, leaves, leaf_size = 40, 9, 12, 3, 2, 6, 3
    x = rng.normal(size=(rows, features)).astype(np.float32)
    truth = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]], dtype=np.float32)
    y = (x @ truth + rng.normal(scale=0.1, size=(rows, outputs))).astype(np.float32)
    digest = hashlib.sha256(x.astype("<f4").tobytes() + y.astype("<f4").tobytes()).hexdigest()
    definitions = (
        f"static const float EX[] = {{{c_floats(x)}}};\n"
        f"static const float EY[] = {{{c_floats(y)}}};"
    )
    fields = {"rows": rows, "holdout": holdout, "batch": leaves * leaf_size, "leaves": leaves,
              "shuffle": 0, "shuffle_seed": 0, "outputs": outputs}  # fmt: skip
    n = features * outputs + outputs
    exe = build(tmp_path, {
        "SYSTEM": "regress", "IDENTITY": "1" * 64, "N_PARAMS": n, "N_STATE": n,
        "BATCH": leaves * leaf_size, "LEAVES": leaves, "LEAF_SIZE": leaf_size, "STEPS": steps,
        "FEATURES": features, "OUTPUTS": outputs, "LABEL_KIND": 1, "SHUFFLE": 0,
        "SHUFFLE_SEED": 0, "DATA_KIND": 1, "DATA_PATH": "", "DATA_SHA256": digest, "ROWS": rows,
        "HOLDOUT": holdout, "EMBEDDED_DEFINITIONS": definitions, "EMBEDDED_X": "EX",
        "EMBEDDED_Y": "EY",
    })  # fmt: skip
    events = run(exe, tmp_path / "params")
    losses, params, mse = reference_run(x, y, fields, steps, classes=False)
    assert [e["loss_bits"] for e in events if e["event"] == "step"] == losses
    assert (tmp_path / "params").read_bytes() == params
    assert events[-1]["holdout_mse"] == float(f"{mse:.9g}")
    assert "holdout_accuracy" not in events[-1]
