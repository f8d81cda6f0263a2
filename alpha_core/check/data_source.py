"""The `data` item of a system: a table read at build time (every row checked by the runtime's
rules, alpha_core/data/csv_rows.py), or the synthetic source."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import PurePosixPath

from alpha_core.check import arguments as A
from alpha_core.check.context import CheckContext
from alpha_core.data import sequences, synthetic
from alpha_core.data.csv_rows import Shape, checked_rows
from alpha_core.data.spec import DataSpec
from alpha_core.support.files import DATA_LIMIT, why_not_read
from alpha_core.syntax import ast

ReadFile = Callable[[str], bytes | None]

TABLE = [
    A.Arg("path", "string"),
    A.Arg("features", "int", low=1),
    A.Arg("label", "name", "last"),
    A.Arg("classes", "int", 0, low=0),
    A.Arg("targets", "int", 0, low=0),
    A.Arg("holdout", "int", 0, low=0),
    A.Arg("positions", "int", 1, low=1, high=65_536),
    A.Arg("tokens", "int", 0, low=0, high=1 << 24),
]
SYNTHETIC = [
    A.Arg("rows", "int", low=2, high=1_000_000),
    A.Arg("features", "int", low=1, high=65_536),
    A.Arg("classes", "int", 0, low=0, high=65_536),
    A.Arg("targets", "int", 0, low=0, high=65_536),
    A.Arg("seed", "int", 0, low=0),
    A.Arg("noise", "float", 0.1, low=0.0),
    A.Arg("holdout", "int", -1, low=-1),
]
SEQUENCES = [
    A.Arg("task", "name"),
    A.Arg("length", "int", low=1, high=64),
    A.Arg("rows", "int", low=2, high=1_000_000),
    A.Arg("seed", "int", 0, low=0),
    A.Arg("holdout", "int", -1, low=-1),
]
SYNTHETIC_VALUES = 1 << 24  # x, y and the class centres or weights, all together


def check_data(
    item: ast.DataItem, ctx: CheckContext, read_file: ReadFile, base_dir: str
) -> DataSpec | None:
    """The data item's source: a CSV table read once for its digest, or the synthetic source."""
    src = item.source
    if src.func == "table":
        args = A.bind(ctx, src, TABLE, positional=1)
        if args is None:
            return None
        return _table(args, src, ctx, read_file, base_dir)
    if src.func == "synthetic":
        args = A.bind(ctx, src, SYNTHETIC)
        if args is None:
            return None
        kind, outputs = _label_kind(args, src, ctx)
        if kind is None:
            return None
        rows = int(args["rows"])
        holdout = int(args["holdout"]) if int(args["holdout"]) >= 0 else rows // 5
        if holdout >= rows:
            ctx.refuse("bad-argument", f"`holdout` is {holdout} of only {rows} rows", src.span)
            return None
        features = int(args["features"])
        # the checker generates the rows to hash them: keep that bounded in time and memory
        values = (rows + outputs) * features + rows * outputs
        if values > SYNTHETIC_VALUES:
            ctx.refuse(
                "bad-argument",
                f"`synthetic` would generate {values:,} values; at most "
                f"{SYNTHETIC_VALUES:,} are generated",
                src.span,
                help="give fewer `rows:` or `features:`, or use a `table` data set",
            )
            return None
        spec = DataSpec(
            "synthetic",
            features,
            kind,
            outputs,
            rows,
            holdout,
            "",
            seed=int(args["seed"]),
            noise=float(args["noise"]),
        )
        return DataSpec(
            spec.kind,
            spec.features,
            kind,
            outputs,
            rows,
            holdout,
            synthetic.digest(spec),  # memoized by the spec: the rows are generated once
            seed=spec.seed,
            noise=spec.noise,
        )
    if src.func == "sequences":
        args = A.bind(ctx, src, SEQUENCES)
        return None if args is None else _sequences(args, src, ctx)
    ctx.unknown("data source", src.func, src.func_span, ["table", "synthetic", "sequences"])
    return None


def _sequences(
    args: dict[str, float | int | str], call: ast.Call, ctx: CheckContext
) -> DataSpec | None:
    """Digit strings and a task on them (alpha_core/data/sequences.py): 2 * length token
    values per row, `length` labels of 11 classes."""
    task, length, rows = str(args["task"]), int(args["length"]), int(args["rows"])
    if task not in sequences.TASKS:
        ctx.refuse(
            "bad-argument",
            f"`task: {task}` is not one of " + ", ".join(sequences.TASKS),
            call.span,
        )
        return None
    holdout = int(args["holdout"]) if int(args["holdout"]) >= 0 else rows // 5
    if holdout >= rows:
        ctx.refuse("bad-argument", f"`holdout` is {holdout} of only {rows} rows", call.span)
        return None
    if rows * 3 * length > SYNTHETIC_VALUES:
        ctx.refuse(
            "bad-argument",
            f"`sequences` would generate {rows * 3 * length:,} values; at most "
            f"{SYNTHETIC_VALUES:,} are generated",
            call.span,
        )
        return None
    seed = int(args["seed"])
    return DataSpec(
        "synthetic",
        2 * length,
        "class",
        sequences.VOCABULARY,
        rows,
        holdout,
        sequences.digest(task, length, rows, seed),
        seed=seed,
        task=task,
        positions=length,
    )


def _label_kind(
    args: dict[str, float | int | str], call: ast.Call, ctx: CheckContext
) -> tuple[str | None, int]:
    classes, targets = int(args["classes"]), int(args["targets"])
    if (classes > 0) == (targets > 0):
        ctx.refuse(
            "bad-argument", "give exactly one of `classes:` (at least 2) and `targets:`", call.span
        )
        return None, 0
    if classes == 1:
        ctx.refuse("bad-argument", "`classes` must be at least 2", call.span)
        return None, 0
    return ("class", classes) if classes else ("regression", targets)


def _table(
    args: dict[str, float | int | str],
    call: ast.Call,
    ctx: CheckContext,
    read_file: ReadFile,
    base_dir: str,
) -> DataSpec | None:
    kind, outputs = _label_kind(args, call, ctx)
    if kind is None:
        return None
    if args["label"] != "last":
        ctx.refuse(
            "bad-argument", "`label:` must be `last` (the label is the last column)", call.span
        )
        return None
    rel = str(args["path"])
    path = rel if rel.startswith("/") else str(PurePosixPath(base_dir) / rel)
    content = read_file(path)
    where = call.args[0].span if call.args else call.span
    if content is None:
        why = why_not_read(path, DATA_LIMIT)
        ctx.refuse("data-unreadable", f"cannot read `{rel}` (looked for {path}): {why}", where)
        return None
    features = int(args["features"])
    positions = int(args["positions"])
    if positions > 1 and kind != "class":
        ctx.refuse(
            "bad-argument",
            "`positions:` counts class labels per row (a sequence's answer); it needs `classes:`",
            call.span,
        )
        return None
    digest = hashlib.sha256(content).hexdigest()
    # every row, by the runtime's rules and with its message: the executable would refuse the
    # same line at start-up (memoized by the file's digest and the row shape)
    vocabulary = int(args["tokens"])
    if vocabulary == 1:
        ctx.refuse(
            "bad-argument", "`tokens:` must be at least 2 (or 0: no token columns)", call.span
        )
        return None
    shape = Shape(features, outputs, kind == "class", positions, vocabulary)
    rows = checked_rows(content, digest, shape)
    if rows.fault is not None:
        ctx.refuse("data-malformed", rows.message(path), where)
        return None
    if not rows.count:
        ctx.refuse("data-unreadable", f"`{rel}` has no rows", where)
        return None
    holdout = int(args["holdout"])
    if holdout >= rows.count:
        ctx.refuse("bad-argument", f"`holdout` is {holdout} of only {rows.count} rows", call.span)
        return None
    return DataSpec(
        "table",
        features,
        kind,
        outputs,
        rows.count,
        holdout,
        digest,
        path=path,
        size=len(content),
        positions=positions,
        vocabulary=vocabulary,
    )
