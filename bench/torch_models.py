"""PyTorch eager twins of the benchmarks' models that need only torch and NumPy (no part of
Alpha's compiler), so that a GPU machine without Alpha's build dependencies can train them:
bench/gpu_models.py's `run`, and bench/transformer_torch.py and cnn_torch.py on any machine.

- the d-128 transformer (constants, `torch_module`, `load_named`: Alpha's parameters by name);
- the MNIST-shaped CNN's step (`cnn_loss`: conv 3x3 x32, relu, conv 3x3 x64, relu, max pool 2,
  dense 128, relu, dense 10, softmax cross-entropy).
"""

from __future__ import annotations

import math
from typing import Any

D, HEADS, DH, BLOCKS, T, BATCH, VOCAB = 128, 4, 32, 4, 64, 16, 11
HIDDEN = 4 * D
ANSWER = T // 2  # the answer positions the loss reads: the last T / 2
ROWS = BATCH * 64
LR, BETA1, BETA2, EPS = 0.001, 0.9, 0.999, 1e-8
SCALE = 1.0 / math.sqrt(DH)
# each block's parameters in declaration order: (name, shape, init)
BLOCK_PARAMS = (
    ("ln1g", (D,), "ones"),
    ("ln1b", (D,), "zeros"),
    ("wq", (D, D), "w"),
    ("bq", (D,), "zeros"),
    ("wk", (D, D), "w"),
    ("bk", (D,), "zeros"),
    ("wv", (D, D), "w"),
    ("bv", (D,), "zeros"),
    ("wo", (D, D), "w"),
    ("bo", (D,), "zeros"),
    ("ln2g", (D,), "ones"),
    ("ln2b", (D,), "zeros"),
    ("w1", (D, HIDDEN), "w"),
    ("b1", (HIDDEN,), "zeros"),
    ("w2", (HIDDEN, D), "w2"),
    ("b2", (D,), "zeros"),
)


def torch_module() -> Any:
    """The transformer as an idiomatic PyTorch eager module (its class defined here so that
    importing this file does not need torch)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(D, eps=1e-5)
            self.q, self.k, self.v = nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, D)
            self.o = nn.Linear(D, D)
            self.ln2 = nn.LayerNorm(D, eps=1e-5)
            self.fc = nn.Linear(D, HIDDEN)
            self.gelu = nn.GELU(approximate="tanh")
            self.proj = nn.Linear(HIDDEN, D)

        def heads(self, p: torch.Tensor) -> torch.Tensor:
            b, t, _ = p.shape
            return p.view(b, t, HEADS, DH).transpose(1, 2)

        def forward(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            b, t, _ = h.shape
            a = self.ln1(h)
            q, k, v = self.heads(self.q(a)), self.heads(self.k(a)), self.heads(self.v(a))
            scores = (q @ k.transpose(-2, -1) * SCALE).masked_fill(mask, float("-inf"))
            mixed = torch.softmax(scores, dim=-1) @ v
            h = h + self.o(mixed.transpose(1, 2).reshape(b, t, D))
            return h + self.proj(self.gelu(self.fc(self.ln2(h))))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(VOCAB, D)
            self.pos = nn.Parameter(torch.zeros(T, D))
            self.blocks = nn.ModuleList(Block() for _ in range(BLOCKS))
            self.ln_f = nn.LayerNorm(D, eps=1e-5)
            self.head = nn.Linear(D, VOCAB)
            self.register_buffer("mask", torch.ones(T, T, dtype=torch.bool).triu(1))

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            h = self.tok(x) + self.pos
            for block in self.blocks:
                h = block(h, self.mask)
            logits = self.head(self.ln_f(h)[:, T - ANSWER :])
            total = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1), reduction="sum")
            return total / x.shape[0]

    return GPT()


def load_named(model: Any, values: dict[str, Any]) -> None:
    """Copies Alpha's parameters (by their Alpha names: `tok`, `blocks[0].wq`, ...; tensors or
    arrays) into the module on its device (nn.Linear holds W transposed)."""
    import torch

    device = next(model.parameters()).device
    values = {k: torch.as_tensor(v).to(device) for k, v in values.items()}
    linears = {"wq": "q", "wk": "k", "wv": "v", "wo": "o", "w1": "fc", "w2": "proj"}
    biases = {"bq": "q", "bk": "k", "bv": "v", "bo": "o", "b1": "fc", "b2": "proj"}
    count = sum(int(v.numel()) for v in values.values())
    with torch.no_grad():
        model.tok.weight.copy_(values.pop("tok"))
        model.pos.copy_(values.pop("pos"))
        model.ln_f.weight.copy_(values.pop("lnfg"))
        model.ln_f.bias.copy_(values.pop("lnfb"))
        model.head.weight.copy_(values.pop("wout").T)
        model.head.bias.copy_(values.pop("bout"))
        for i, block in enumerate(model.blocks):
            for name, _, _ in BLOCK_PARAMS:
                value = values.pop(f"blocks[{i}].{name}")
                if name in linears:
                    getattr(block, linears[name]).weight.copy_(value.T)
                elif name in biases:
                    getattr(block, biases[name]).bias.copy_(value)
                else:
                    norm = block.ln1 if name.startswith("ln1") else block.ln2
                    (norm.weight if name.endswith("g") else norm.bias).copy_(value)
    assert not values, sorted(values)
    assert sum(p.numel() for p in model.parameters()) == count


CNN_BATCH = 64
CNN_ADAM = (0.001, 0.9, 0.999, 1e-8)  # bench/cnn_torch.py SYSTEM's learner


def cnn_loss(params: list[Any], x: Any, y: Any) -> Any:
    """The CNN's mean softmax cross-entropy on a batch (x: B x 784), params in declaration
    order (k1, c1, k2, c2, w1, b1, w2, b2)."""
    import torch.nn.functional as F

    k1, c1, k2, c2, w1, b1, w2, b2 = params
    h = F.relu(F.conv2d(x.reshape(-1, 1, 28, 28), k1) + c1)
    h = F.relu(F.conv2d(h, k2) + c2)
    h = F.max_pool2d(h, 2, 2)
    z = F.relu(h.reshape(h.shape[0], 9216) @ w1 + b1) @ w2 + b2
    return F.cross_entropy(z, y)
