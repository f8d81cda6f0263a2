"""What a system's data is, as the checker found it and the build embeds it: a table file or a
synthetic source, its sizes, its held-out rows and the digest every role checks."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DataSpec:
    kind: str  # table | synthetic
    features: int
    label_kind: str  # class | regression
    outputs: int  # classes, or regression targets per example
    rows: int
    holdout: int
    sha256: str  # of the file bytes (table) or the embedded x then y bytes (synthetic)
    path: str | None = None  # table: absolute path at build time
    seed: int = 0  # synthetic
    noise: float = 0.0  # synthetic
    size: int = 0  # table: the file's bytes (the runtime refuses another size before reading)
    task: str = ""  # synthetic sequences: reverse | sort | copy ("" for the other sources)
    positions: int = 1  # class labels per row: one per answer position of a sequence
    vocabulary: int = 0  # table: 0, or the token count every feature column is checked against

    @property
    def train_rows(self) -> int:
        return self.rows - self.holdout
