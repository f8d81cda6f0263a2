"""Every row of a CSV table read by the runtime's rules (runtime/data.c `load_csv`), so that the
checker refuses what the executable would refuse at start-up, with the same message and line.

The rules, in the order the runtime applies them to each line (lines are numbered from 1, every
line counted): a trailing `\\r` is dropped; a line holding a NUL byte is refused; an empty line,
or one of spaces and tabs only, is no row; the first `columns` comma-separated fields (spaces
and tabs around them trimmed) must each be a decimal number (`[+-]digits[.digits][e[+-]digits]`)
whose float32 (correctly rounded, as musl's `strtof`) is finite; the line must have exactly
`columns` fields; a class label must be an integral float32 in `0 .. classes-1`.

The float32 of a field is Python's correctly rounded double rounded once more to float32, which
is the correctly rounded float32 except when the double lies exactly halfway between two float32
values; those (rare) fields are rounded exactly from their decimal text instead.

A file's verdict depends only on its bytes and the row shape, so it is memoized by its SHA-256
and the shape: an editor re-checking a system after each keystroke reads its rows once.
"""

from __future__ import annotations

import math
import re
import struct
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

_DECIMAL = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# A field that is certainly a finite float32 (below 10^38, under float32's largest 3.4e38): no
# exponent and at most 38 integer digits, or at most 9 integer digits and an exponent of at
# most 29 (or a negative one). A row of such fields needs no float parsing.
_PLAIN = (
    rb"[ \t]*[+-]?(?:[0-9]{1,38}(?:\.[0-9]*)?|\.[0-9]+"
    rb"|(?:[0-9]{1,9}(?:\.[0-9]*)?|\.[0-9]+)[eE](?:-[0-9]+|\+?[0-2]?[0-9]))[ \t]*"
)
_SMALL_INTEGER = re.compile(rb"[ \t]*\+?([0-9]{1,7})[ \t]*")  # exact in float32, never negative
NOT_A_NUMBER = "is not a finite decimal number"
_FLOAT32_LIMIT = 2.0**128 - 2.0**103  # halfway between the largest float32 and 2^128: inf


@dataclass(frozen=True)
class Shape:
    """What a row holds: `features` numbers, then `labels` class indices (class kind, `outputs`
    classes; one, or a sequence's answer positions) or `outputs` targets."""

    features: int
    outputs: int
    class_kind: bool
    labels: int = 1
    vocabulary: int = 0  # 0, or every feature must be a token value in 0 .. vocabulary-1
    label_column: int = -1  # the first label column (from 0); -1: the last columns
    header: bool = False  # the first line that is not blank names the columns
    label_name: str = ""  # with a header: the name of the first label column, checked

    @property
    def label_width(self) -> int:
        return self.labels if self.class_kind else self.outputs

    @property
    def columns(self) -> int:
        return self.features + self.label_width

    @property
    def first_label(self) -> int:
        return self.features if self.label_column < 0 else self.label_column

    def split(self, fields: list[bytes]) -> tuple[list[bytes], list[bytes]]:
        """A row's feature fields (every column outside the labels, in order) and label fields."""
        lo, hi = self.first_label, self.first_label + self.label_width
        return fields[:lo] + fields[hi : self.columns], fields[lo:hi]


@dataclass(frozen=True)
class Rows:
    """A table's verdict: its row count, or the first line the runtime would refuse and why
    (the runtime's message after `PATH line N: `)."""

    count: int
    line: int = 0
    fault: str | None = None
    name: str = "data-malformed"  # or data-bad-header: the header line does not fit

    def message(self, path: str) -> str:
        """The runtime's data-malformed message for this file at `path`."""
        return f"{path} line {self.line}: {self.fault}"


def _float32(value: float) -> float:
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _exact_float32(text: bytes) -> float:
    """The correctly rounded float32 of a decimal (round half to even), from its exact value."""
    q = Fraction(text.decode("ascii").lstrip("+"))
    if q == 0:
        return 0.0
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    quantum = Fraction(2) ** (max(e, -126) - 23)  # float32: 24 significant bits, subnormal floor
    value = round(a / quantum) * quantum  # Fraction rounds half to even
    if value >= 2**128:
        return math.copysign(math.inf, q)
    return math.copysign(float(value), q)


def _neighbour(f: float, toward: float) -> float:
    """The float32 next to float32 `f` in the direction of `toward`."""
    bits = struct.unpack("<I", struct.pack("<f", f))[0]
    up = toward > f
    if f == 0:
        return math.copysign(2.0**-149, 1.0 if up else -1.0)
    bits += 1 if (up == (f > 0)) else -1
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def field_float32(field: bytes) -> float | None:
    """A trimmed field's float32 as the runtime reads it, or None when it is not a decimal
    number whose float32 is finite."""
    if not _DECIMAL.fullmatch(field):
        return None
    d = float(field)
    f = _float32(d)
    if math.isfinite(d) and f != d:
        # double rounding goes wrong only from a double exactly halfway between two float32s
        if math.isinf(f):
            halfway = abs(d) == _FLOAT32_LIMIT
        else:
            halfway = (f + _neighbour(f, d)) / 2 == d
        if halfway:
            f = _exact_float32(field)
    return f if math.isfinite(f) else None


def _index_ok(field: bytes, count: int) -> bool:
    """Whether a checked field is an index in 0 .. count-1 as the runtime compares: integral,
    and below the count as a float32."""
    small = _SMALL_INTEGER.fullmatch(field)
    if small is not None:
        value = float(int(small.group(1)))
    else:
        parsed = field_float32(field.strip(b" \t"))
        assert parsed is not None  # the row's fields were checked before
        value = parsed
    return 0.0 <= value < _float32(float(count)) and value == math.floor(value)


def _label_fault(field: bytes, shape: Shape) -> str | None:
    if _index_ok(field, shape.outputs):
        return None
    small = _SMALL_INTEGER.fullmatch(field)
    label = float(int(small.group(1))) if small else field_float32(field.strip(b" \t"))
    assert label is not None
    return f"label {label:.9g} is not a class index in 0..{shape.outputs - 1}"


def _row_fault(line: bytes, shape: Shape) -> str | None:
    """What the runtime says of one line (no NUL, not blank), or None for a good row."""
    fields = line.split(b",")
    for i, field in enumerate(fields[: shape.columns]):
        if field_float32(field.strip(b" \t")) is None:
            return f"column {i + 1} {NOT_A_NUMBER}"
    if len(fields) != shape.columns:
        kind = "label" if shape.class_kind else "targets"
        targets = shape.labels if shape.class_kind else shape.outputs
        return (
            f"{len(fields)} columns, expected {shape.columns} ({shape.features} features + "
            f"{targets} {kind})"
        )
    return _values_fault(fields, shape)


def _values_fault(fields: list[bytes], shape: Shape) -> str | None:
    """After the row's numbers and columns: its tokens, then its labels (the runtime's order)."""
    features, labels = shape.split(fields)
    if shape.vocabulary:
        for k, field in enumerate(features):
            if not _index_ok(field, shape.vocabulary):
                column = k + 1 if k < shape.first_label else k + 1 + shape.label_width
                return f"column {column} is not a token in 0..{shape.vocabulary - 1}"
    if shape.class_kind:
        return _labels_fault(labels, shape)
    return None


def _labels_fault(fields: list[bytes], shape: Shape) -> str | None:
    """The first label that is not a class index, in column order (as the runtime reads)."""
    for field in fields:
        fault = _label_fault(field, shape)
        if fault is not None:
            return fault
    return None


_ROW_PATTERNS: dict[int, re.Pattern[bytes]] = {}


def _plain_row(columns: int) -> re.Pattern[bytes]:
    pattern = _ROW_PATTERNS.get(columns)
    if pattern is None:
        pattern = re.compile(_PLAIN + rb"(?:," + _PLAIN + rb"){" + str(columns - 1).encode() + b"}")
        _ROW_PATTERNS[columns] = pattern
    return pattern


def _lines(content: bytes) -> Iterator[bytes]:
    """The lines of `content` one at a time, without their newline (the newline that ends the
    last line starts no line). Never a list of them: for a file of a gigabyte, a list of its
    millions of lines held three times the file's size."""
    start, end = 0, len(content)
    while start < end:
        stop = content.find(b"\n", start)
        if stop < 0:
            stop = end
        yield content[start:stop]
        start = stop + 1


HEADER_HINT = " (a header line? give the table `header: true`)"


def header_fault(line: bytes, shape: Shape) -> str | None:
    """What the runtime says of a table's header line (no NUL, not blank), or None."""
    names = [f.strip(b" \t") for f in line.split(b",")]
    if len(names) != shape.columns:
        return (
            f"the header has {len(names)} columns, expected {shape.columns} ({shape.features} "
            f"features + {shape.label_width} {'label' if shape.class_kind else 'targets'})"
        )
    if shape.label_name and names[shape.first_label] != shape.label_name.encode():
        got = names[shape.first_label].decode("utf-8", errors="replace")
        return (
            f"header column {shape.first_label + 1} is `{got}`, not the label column "
            f"`{shape.label_name}`"
        )
    return None


def header_names(content: bytes) -> tuple[int, list[str]] | None:
    """The first line that is not blank, as a header: its number and its trimmed names; None
    when there is none or it holds a NUL byte."""
    for number, line in enumerate(_lines(content), 1):
        if line.endswith(b"\r"):
            line = line[:-1]
        if b"\0" in line:
            return None
        if line.strip(b" \t"):
            names = [f.strip(b" \t").decode("utf-8", errors="replace") for f in line.split(b",")]
            return number, names
    return None


def read_rows(content: bytes, shape: Shape) -> Rows:
    """Every line of `content` by the runtime's rules: the row count, or the first fault. One
    pass, linear in the bytes; a row of plain numbers (the common case) costs one regular
    expression match, and only a class label is converted."""
    plain = _plain_row(shape.columns)
    last = shape.label_column < 0
    rows = 0
    first = True  # the first line that is not blank: a header, or a row that may be one
    for number, line in enumerate(_lines(content), 1):
        if line.endswith(b"\r"):
            line = line[:-1]
        if b"\0" in line:
            return Rows(rows, number, "contains a NUL byte")
        if not line.strip(b" \t"):
            continue
        if first and shape.header:
            first = False
            fault = header_fault(line, shape)
            if fault is not None:
                return Rows(rows, number, fault, "data-bad-header")
            continue
        if plain.fullmatch(line):
            if shape.vocabulary or not last:
                fault = _values_fault(line.split(b","), shape)
            elif not shape.class_kind:
                fault = None
            elif shape.labels == 1:
                fault = _label_fault(line.rpartition(b",")[2], shape)
            else:
                fault = _labels_fault(line.split(b",")[shape.features :], shape)
        else:
            fault = _row_fault(line, shape)
            if first and fault is not None and fault.endswith(NOT_A_NUMBER):
                fault += HEADER_HINT
        first = False
        if fault is not None:
            return Rows(rows, number, fault)
        rows += 1
    return Rows(rows)


_MEMO: OrderedDict[tuple[str, Shape], Rows] = OrderedDict()
MEMO_ENTRIES = 256


@dataclass
class ReadCount:
    """How many tables had their rows read (memo misses), for tests and benchmarks."""

    tables: int = 0


READS = ReadCount()


def checked_rows(content: bytes, digest: str, shape: Shape) -> Rows:
    """`read_rows`, once per (file digest, shape): the editor re-checks without re-reading."""
    key = (digest, shape)
    kept = _MEMO.get(key)
    if kept is not None:
        _MEMO.move_to_end(key)
        return kept
    rows = read_rows(content, shape)
    READS.tables += 1
    _MEMO[key] = rows
    if len(_MEMO) > MEMO_ENTRIES:
        _MEMO.popitem(last=False)
    return rows


def clear_memo() -> None:
    _MEMO.clear()
