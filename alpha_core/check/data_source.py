"""The `data` item of a system: a file read at build time and checked by the runtime's rules (a
CSV table, every row: alpha_core/data/csv_rows.py; NumPy arrays and token files:
alpha_core/data/arrays.py), or a synthetic source."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import cast

from alpha_core.check import arguments as A
from alpha_core.check.context import CheckContext, suggest
from alpha_core.data import arrays, sequences, synthetic
from alpha_core.data.csv_rows import Shape, checked_rows, header_names
from alpha_core.data.spec import DataSpec
from alpha_core.support.files import DATA_LIMIT, why_not_read
from alpha_core.support.span import Span
from alpha_core.syntax import ast

ReadFile = Callable[[str], bytes | None]
Args = dict[str, float | int | str]

TABLE = [
    A.Arg("path", "string"),
    A.Arg("features", "int", 0, low=0),
    A.Arg("label", "name", "last"),
    A.Arg("classes", "int", 0, low=0),
    A.Arg("targets", "int", 0, low=0),
    A.Arg("holdout", "int", 0, low=0),
    A.Arg("positions", "int", 1, low=1, high=65_536),
    A.Arg("tokens", "int", 0, low=0, high=1 << 24),
    A.Arg("header", "name", "false"),
]
NPY = [
    A.Arg("x", "string"),
    A.Arg("y", "string"),
    A.Arg("classes", "int", 0, low=0),
    A.Arg("targets", "int", 0, low=0),
    A.Arg("holdout", "int", 0, low=0),
    A.Arg("tokens", "int", 0, low=0, high=1 << 24),
]
NPZ = [
    A.Arg("path", "string"),
    A.Arg("x", "name", "x"),
    A.Arg("y", "name", "y"),
    A.Arg("classes", "int", 0, low=0),
    A.Arg("targets", "int", 0, low=0),
    A.Arg("holdout", "int", 0, low=0),
    A.Arg("tokens", "int", 0, low=0, high=1 << 24),
]
TOKENS = [
    A.Arg("path", "string"),
    A.Arg("length", "int", low=1, high=65_536),
    A.Arg("tokens", "int", low=2, high=1 << 24),
    A.Arg("dtype", "name", "u16"),
    A.Arg("holdout", "int", 0, low=0),
]
SOURCES = ("table", "npy", "npz", "tokens", "synthetic", "sequences")
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
    if src.func in ("npy", "npz", "tokens"):
        signature = {"npy": NPY, "npz": NPZ, "tokens": TOKENS}[src.func]
        args = A.bind(ctx, src, signature, positional=2 if src.func == "npy" else 1)
        if args is None:
            return None
        if src.func == "tokens":
            return _tokens(args, src, ctx, read_file, base_dir)
        return _arrays(src.func, args, src, ctx, read_file, base_dir)
    near = suggest(src.func, SOURCES)
    ctx.refuse(
        "unknown-name",
        f"unknown data source `{src.func}`; the sources are "
        + ", ".join(f"`{n}`" for n in SOURCES),
        src.func_span,
        help="did you mean " + " or ".join(f"`{n}`" for n in near) + "?" if near else None,
    )
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


def _path(rel: str, base_dir: str) -> str:
    return rel if rel.startswith("/") else str(PurePosixPath(base_dir) / rel)


def _read(
    rel: str, base_dir: str, where: Span, ctx: CheckContext, read_file: ReadFile
) -> tuple[str, bytes] | None:
    """A data file's absolute path and bytes, or None (refused `data-unreadable`)."""
    path = _path(rel, base_dir)
    content = read_file(path)
    if content is None:
        why = why_not_read(path, DATA_LIMIT)
        ctx.refuse("data-unreadable", f"cannot read `{rel}` (looked for {path}): {why}", where)
        return None
    return path, content


def _holdout(args: Args, rows: int, call: ast.Call, ctx: CheckContext) -> int | None:
    holdout = int(args["holdout"])
    if holdout >= rows:
        ctx.refuse("bad-argument", f"`holdout` is {holdout} of only {rows} rows", call.span)
        return None
    return holdout


def _table(
    args: Args,
    call: ast.Call,
    ctx: CheckContext,
    read_file: ReadFile,
    base_dir: str,
) -> DataSpec | None:
    kind, outputs = _label_kind(args, call, ctx)
    if kind is None:
        return None
    header, label = str(args["header"]), str(args["label"])
    if header not in ("true", "false"):
        ctx.refuse("bad-argument", f"`header: {header}` is not `true` or `false`", call.span)
        return None
    if label not in ("last", "first") and header != "true":
        ctx.refuse(
            "bad-argument",
            f"`label: {label}` names a column, which needs `header: true`; without a header "
            "the labels are `first` or `last`",
            call.span,
        )
        return None
    features = int(args["features"])
    if features == 0 and header != "true":
        ctx.refuse(
            "bad-argument",
            "give `features:` (only a table with `header: true` counts them itself)",
            call.span,
        )
        return None
    rel = str(args["path"])
    where = call.args[0].span if call.args else call.span
    read = _read(rel, base_dir, where, ctx, read_file)
    if read is None:
        return None
    path, content = read
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
    width = positions if kind == "class" else outputs
    label_column, label_name = {"last": -1, "first": 0}.get(label, -1), ""
    if header == "true":
        names = header_names(content)
        if names is None:
            ctx.refuse("data-unreadable", f"`{rel}` has no header line", where)
            return None
        line, columns = names
        if features == 0:
            features = len(columns) - width
        if label not in ("last", "first"):
            if label not in columns:
                shown = ", ".join(f"`{n}`" for n in columns[:12])
                ctx.refuse(
                    "data-bad-header",
                    f"{path} line {line}: no column is named `{label}` (the header names "
                    f"{shown}{', …' if len(columns) > 12 else ''})",
                    where,
                )
                return None
            label_column = columns.index(label)
            label_name = label  # the runtime checks that the header names it there
        if features < 1 or label_column + width > features + width:
            ctx.refuse(
                "data-bad-header",
                f"{path} line {line}: the header has {len(columns)} columns, too few for "
                f"{width} {'label' if kind == 'class' else 'targets'} from column "
                f"{(label_column if label_column >= 0 else len(columns) - width) + 1}",
                where,
            )
            return None
    shape = Shape(
        features,
        outputs,
        kind == "class",
        positions,
        vocabulary,
        label_column,
        header == "true",
        label_name,
    )
    rows = checked_rows(content, digest, shape)
    if rows.fault is not None:
        ctx.refuse(rows.name, rows.message(path), where)
        return None
    if not rows.count:
        ctx.refuse("data-unreadable", f"`{rel}` has no rows", where)
        return None
    holdout = _holdout(args, rows.count, call, ctx)
    if holdout is None:
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
        header=header == "true",
        label_column=label_column,
        label_name=label_name,
    )


def _refuse_fault(ctx: CheckContext, fault: arrays.Fault, where: Span) -> None:
    ctx.refuse(fault.name, fault.message, where)


def _arrays(
    source: str,
    args: Args,
    call: ast.Call,
    ctx: CheckContext,
    read_file: ReadFile,
    base_dir: str,
) -> DataSpec | None:
    """`npy(X, Y, …)`: two `.npy` files; `npz(PATH, x: KEY, y: KEY, …)`: two arrays of one
    archive. The features are x's axes after the first, flattened in C order."""
    kind, outputs = _label_kind(args, call, ctx)
    if kind is None:
        return None
    vocabulary = int(args["tokens"])
    if vocabulary == 1:
        ctx.refuse(
            "bad-argument", "`tokens:` must be at least 2 (or 0: no token features)", call.span
        )
        return None
    where_x = call.args[0].span if call.args else call.span
    where_y = call.args[1].span if source == "npy" and len(call.args) > 1 else where_x
    read = _read(
        str(args["x"] if source == "npy" else args["path"]), base_dir, where_x, ctx, read_file
    )
    if read is None:
        return None
    path, content = read
    labels: tuple[str, bytes] | None = None
    if source == "npy":
        labels = _read(str(args["y"]), base_dir, where_y, ctx, read_file)
        if labels is None:
            return None
    digest = hashlib.sha256(content).hexdigest()
    labels_digest = hashlib.sha256(labels[1]).hexdigest() if labels else ""
    key = (source, digest, labels_digest, str(args["x"]), str(args["y"]), kind, outputs, vocabulary)
    verdict = _ARRAYS.get(key)
    if verdict is None:
        verdict = _read_arrays(source, path, content, labels, args, kind, outputs, vocabulary)
        _ARRAYS[key] = verdict
        if len(_ARRAYS) > 64:
            _ARRAYS.pop(next(iter(_ARRAYS)))
    if isinstance(verdict[0], arrays.Fault):
        fault, on_labels = cast(tuple[arrays.Fault, bool], verdict)
        _refuse_fault(ctx, fault, where_y if on_labels else where_x)
        return None
    rows, features, positions = cast(tuple[int, int, int], verdict)
    holdout = _holdout(args, rows, call, ctx)
    if holdout is None:
        return None
    return DataSpec(
        "table",
        features,
        kind,
        outputs,
        rows,
        holdout,
        digest,
        path=path,
        size=len(content),
        positions=positions,
        vocabulary=vocabulary,
        format=source,
        labels_path=labels[0] if labels else None,
        labels_sha256=labels_digest,
        labels_size=len(labels[1]) if labels else 0,
        x_key=str(args["x"]) if source == "npz" else "",
        y_key=str(args["y"]) if source == "npz" else "",
    )


# (rows, features, labels per row), or the fault and whether it is the labels'
_Verdict = tuple[int, int, int] | tuple[arrays.Fault, bool]
_ARRAYS: dict[tuple[str | int, ...], _Verdict] = {}


def _read_arrays(
    source: str,
    path: str,
    content: bytes,
    labels: tuple[str, bytes] | None,
    args: Args,
    kind: str,
    outputs: int,
    vocabulary: int,
) -> _Verdict:
    """Both arrays by the runtime's rules, in its order: x's header, y's header, their shapes,
    x's values, y's values (runtime/data.c `load_arrays`)."""
    if source == "npz":
        xs: list[tuple[bytes | memoryview, str]] = []
        for k in (str(args["x"]), str(args["y"])):
            found = arrays.find_member(content, k, path)
            if isinstance(found, arrays.Fault):
                return found, k == str(args["y"]) and k != str(args["x"])
            offset, size = found
            xs.append((memoryview(content)[offset : offset + size], f"{path} array `{k}`"))
        (xbuf, xwhere), (ybuf, ywhere) = xs
    else:
        assert labels is not None
        xbuf, xwhere, ybuf, ywhere = content, path, labels[1], labels[0]
    class_kind = kind == "class"
    x = arrays.read_npy(xbuf, xwhere, arrays.FEATURE_DTYPES, "features")
    if isinstance(x, arrays.Fault):
        return x, False
    accepted = arrays.CLASS_DTYPES if class_kind else arrays.TARGET_DTYPES
    y = arrays.read_npy(ybuf, ywhere, accepted, "labels" if class_kind else "targets")
    if isinstance(y, arrays.Fault):
        return y, True
    shape = arrays.shape_fault(x, y, xwhere, ywhere, class_kind, outputs)
    if isinstance(shape[0], arrays.Fault):
        return cast(tuple[arrays.Fault, bool], shape)
    rows, features, per_row = cast(tuple[int, int, int], shape)
    fault = arrays.features_fault(arrays.values(xbuf, x), rows, features, vocabulary, xwhere)
    if fault is not None:
        return arrays.Fault("data-malformed", fault), False
    fault = arrays.labels_fault(
        arrays.values(ybuf, y), rows, per_row, outputs if class_kind else 0, ywhere
    )
    if fault is not None:
        return arrays.Fault("data-malformed", fault), True
    return rows, features, per_row


def _tokens(
    args: Args,
    call: ast.Call,
    ctx: CheckContext,
    read_file: ReadFile,
    base_dir: str,
) -> DataSpec | None:
    """`tokens(PATH, length: L, tokens: V)`: a flat file of tokens cut into windows of L; row i
    reads tokens i*L … i*L+L-1 and predicts tokens i*L+1 … i*L+L (one label per position)."""
    dtype = str(args["dtype"])
    if dtype not in arrays.TOKEN_WIDTHS:
        ctx.refuse("bad-argument", f"`dtype: {dtype}` is not `u16` or `u32`", call.span)
        return None
    width = arrays.TOKEN_WIDTHS[dtype]
    length, vocabulary = int(args["length"]), int(args["tokens"])
    if width == 2 and vocabulary > 65_536:
        ctx.refuse(
            "bad-argument",
            f"`tokens: {vocabulary}` is more than a u16 token holds (65,536); give `dtype: u32`",
            call.span,
        )
        return None
    rel = str(args["path"])
    where = call.args[0].span if call.args else call.span
    read = _read(rel, base_dir, where, ctx, read_file)
    if read is None:
        return None
    path, content = read
    fault = arrays.token_file_fault(content, width, length, vocabulary, path)
    if fault is not None:
        _refuse_fault(ctx, fault, where)
        return None
    rows = (len(content) // width - 1) // length
    holdout = _holdout(args, rows, call, ctx)
    if holdout is None:
        return None
    return DataSpec(
        "table",
        length,
        "class",
        vocabulary,
        rows,
        holdout,
        hashlib.sha256(content).hexdigest(),
        path=path,
        size=len(content),
        positions=length,
        vocabulary=vocabulary,
        format="tokens",
        token_bytes=width,
    )
