"""What a system's data is, as the checker found it and the build embeds it: a file (a CSV
table, NumPy arrays, a token file) or a synthetic source, its sizes, its held-out rows and the
digest every role checks."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DataSpec:
    kind: str  # table (a file the executable reads) | synthetic (embedded)
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
    format: str = "csv"  # table: csv | npy | npz | tokens (how the executable reads the file)
    header: bool = False  # csv: the first line that is not blank names the columns
    label_column: int = -1  # csv: the first label column (from 0); -1: the last columns
    label_name: str = ""  # csv with a header: the first label column's name
    labels_path: str | None = None  # npy: the labels file (`path` holds the features)
    labels_sha256: str = ""  # npy: of the labels file's bytes
    labels_size: int = 0  # npy: the labels file's bytes
    x_key: str = ""  # npz: the features' array
    y_key: str = ""  # npz: the labels' array
    token_bytes: int = 0  # tokens: 2 (uint16) or 4 (uint32)

    def layout(self) -> str:
        """How the file is read, for the system's canonical text ("" for a headerless CSV
        with the labels last, whose identity is as before)."""
        if self.format == "csv":
            if not self.header and self.label_column < 0:
                return ""
            return f" header={int(self.header)} label_column={self.label_column}"
        if self.format == "npy":
            return f" format=npy labels_sha256={self.labels_sha256}"
        if self.format == "npz":
            return f" format=npz x={self.x_key} y={self.y_key}"
        return f" format=tokens token_bytes={self.token_bytes}"

    @property
    def train_rows(self) -> int:
        return self.rows - self.holdout
