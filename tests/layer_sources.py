"""Sources of the layer-operation tests (tests/test_ops_layers.py, tests/test_ops_conv.py),
shared with bench/ops_torch.py, which trains the same systems with PyTorch."""

from __future__ import annotations

SEQ = """system s {
  data train: synthetic(rows: 120, features: 12, %(labels)s, seed: 5, noise: 0.3, holdout: 24)
  batch 12 leaves 3 shuffle(seed: 3)
  param wq: f32[4, 4] = normal(0.0, 0.4, seed: 1)
  param wk: f32[4, 4] = normal(0.0, 0.4, seed: 2)
  param wv: f32[4, 4] = normal(0.0, 0.4, seed: 3)
  param gn: f32[4] = uniform(0.5, 1.5, seed: 4)
  param s: f32[] = uniform(0.5, 1.0, seed: 6)
  param wo: f32[12, 3] = normal(0.0, 0.4, seed: 5)
  fn layer_norm(h: f32[B, T, D], gain: f32[D]) -> f32[B, T, D] {
    let mu = mean(h, axis: 2, keepdims: true)
    let c = h - mu
    let var = mean(square(c), axis: 2, keepdims: true)
    return c / sqrt(var + 0.00001) * gain
  }
  fn attend(h: f32[B, T, D]) -> f32[B, T, D] {
    let q = h @ wq
    let k = h @ wk
    let v = h @ wv
    let scores = causal_mask(q @ transpose(k) / 2.0)
    return softmax(scores, axis: 2) @ v
  }
  fn model(x: f32[B, 3, 4]) -> f32[B, 3] {
    %(body)s
  }
  loss %(loss)s(model(x), y)
  learner adam(lr: 0.01)
  steps %(steps)d
}
"""
BODIES = {
    # a stable softmax by hand (max kept along the row) and a min over the positions
    "extremes": "let z = x @ wq\n"
    "    let e = exp(z - max(z, axis: 2, keepdims: true))\n"
    "    let p = e / sum(e, axis: 2, keepdims: true) + min(z, axis: 1, keepdims: true) * s\n"
    "    return reshape(p, B, 12) @ wo + max(wo, axis: 0) - min(wo)",
    # multi-head attention the usual way: (B, T, D) -> (B, T, H, d) -> (B, H, T, d), the
    # heads' products per example and head, back to (B, T, D)
    "heads": "let q = transpose(reshape(x @ wq, B, 3, 2, 2), 1, 2)\n"
    "    let k = transpose(reshape(x @ wk, B, 3, 2, 2), 1, 2)\n"
    "    let v = transpose(reshape(x @ wv, B, 3, 2, 2), 1, 2)\n"
    "    let mixed = softmax(causal_mask(q @ k.T), axis: 3) @ v\n"
    "    return reshape(transpose(mixed, 2, 1), B, 12) @ wo",
    "attention": "let h = layer_norm(x, gn)\n"
    "    let a = attend(h) + h\n"
    "    return reshape(a, B, 12) @ wo",
    "activations": "let a = x @ wq * s\n"
    "    let z = gelu(a) + silu(a) * s + abs(a) * 0.1 + maximum(a, 0.0) "
    "- minimum(a, clamp(a, -0.5, 0.5))\n"
    "    return reshape(z, B, 12) @ wo",
    "slice": "let z = slice(x @ wq, axis: 1, start: 1, stop: 3) * s\n"
    "    return reshape(z, B, 8) @ slice(wo, axis: 0, start: 2, stop: 10)",
    "log_softmax": "let z = log_softmax(x @ wk, axis: -1)"
    " + transpose(softmax(transpose(x @ wv), axis: 1)) @ wq\n"
    "    return reshape(sqrt(square(z) + 1.0), B, 12) @ wo",
}


def seq_source(body: str, regression: bool = False, steps: int = 20) -> str:
    return SEQ % {
        "labels": "targets: 3" if regression else "classes: 3",
        "body": BODIES[body] if body in BODIES else body,
        "loss": "mse" if regression else "softmax_cross_entropy",
        "steps": steps,
    }


CNN = """system c {
  data train: synthetic(rows: 100, features: 64, classes: 3, seed: 5, noise: 0.3, holdout: 20)
  batch 8 leaves 2 shuffle(seed: 3)
  param k1: f32[4, 1, 3, 3] = normal(0.0, 0.4, seed: 1)
  param c1: f32[4, 1, 1] = uniform(-0.1, 0.1, seed: 2)
  param k2: f32[3, 4, 2, 2] = normal(0.0, 0.4, seed: 3)
  param w: f32[%(flat)d, 3] = normal(0.0, 0.3, seed: 4)
  fn model(x: f32[B, 1, 8, 8]) -> f32[B, 3] {
    %(body)s
    return reshape(r, B, %(flat)d) @ w
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01)
  steps %(steps)d
}
"""
CNN_BODIES = {
    # padding 1, a 2x2 max pool, a strided padded convolution, an overlapping average pool
    "padded": (
        "let h = relu(conv2d(x, k1, stride: 1, padding: 1) + c1)\n"
        "    let p = max_pool(h, size: 2, stride: 2)\n"
        "    let q = conv2d(p, k2, stride: 2, padding: 1)\n"
        "    let r = avg_pool(q, size: 2, stride: 1)",
        12,
    ),
    # no padding, stride 2, overlapping max windows
    "strided": (
        "let h = tanh(conv2d(x, k1, stride: 2) + c1)\n"
        "    let r = max_pool(h, size: 2, stride: 1) + avg_pool(h, size: 2, stride: 1)",
        16,
    ),
}


def cnn_source(body: str, steps: int = 15) -> str:
    text, flat = CNN_BODIES[body]
    return CNN % {"body": text, "flat": flat, "steps": steps}


EMBED = """system e {
  data train: synthetic(rows: 90, features: 6, classes: 3, seed: 2, noise: 0.3, holdout: 18)
  batch 12 leaves 3
  param table: f32[5, 4] = normal(0.0, 0.5, seed: 1)
  param w: f32[24, 3] = normal(0.0, 0.3, seed: 2)
  fn model(x: f32[B, 6]) -> f32[B, 3] {
    let tokens = x + 2.0
    return reshape(embed(table, tokens), B, 24) @ w
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 12
}
"""


LOSS_SYSTEM = """system l {
  data train: synthetic(rows: 160, features: 5, classes: %(classes)d, seed: 4, holdout: 40)
  batch 16 leaves 4 shuffle(seed: 2)
  param w1: f32[5, 6] = normal(0.0, 0.4, seed: 1)
  param b1: f32[6] = zeros
  param w2: f32[6, %(outputs)d] = normal(0.0, 0.4, seed: 2)
  fn model(x: f32[B, 5]) -> f32[B, %(outputs)d] {
    return tanh(x @ w1 + b1) @ w2
  }
  loss %(loss)s
  learner adam(lr: 0.02)
  steps %(steps)d
}
"""
BINARY = {"classes": 2, "outputs": 1, "loss": "sigmoid_cross_entropy(model(x), y)"}
SMOOTH = {"classes": 4, "outputs": 4, "loss": "softmax_cross_entropy(model(x), y, smoothing: 0.1)"}


def loss_source(case: dict[str, object], steps: int = 40) -> str:
    return LOSS_SYSTEM % {**case, "steps": steps}


DROPOUT = """system d {
  data train: synthetic(rows: 120, features: 12, classes: 3, seed: 5, noise: 0.3, holdout: 24)
  batch 12 leaves 3 shuffle(seed: 3)
  param wq: f32[4, 4] = normal(0.0, 0.4, seed: 1)
  param wo: f32[12, 3] = normal(0.0, 0.4, seed: 5)
  fn model(x: f32[B, 3, 4]) -> f32[B, 3] {
    let h = dropout(relu(x @ wq), rate: 0.3, seed: 9)
    return dropout(reshape(h, B, 12), rate: 0.1, seed: 10) @ wo
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01)
  steps 20
}
"""
