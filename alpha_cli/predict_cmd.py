"""`alpha predict` and `alpha export`: a trained system used on new inputs, and its parameters
written by name and shape for other tools. Neither decides anything of its own: predict builds
the system and runs its executable's `--predict` mode (runtime/predict.c); export reads the
parameters and writes them with alpha_core.checkpoint.export."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
from rich.markup import escape

from alpha_cli.environment import Refused
from alpha_cli.render import diagnostic_json, out, show_refusals
from alpha_core.checkpoint import CheckpointError, read_checkpoint
from alpha_core.checkpoint import export as X
from alpha_core.diagnostics import Diagnostic
from alpha_core.link.toolchain import LinkError
from alpha_core.support.source_file import SourceRefusal, read_source
from alpha_core.workspace.analysis import Analysis, Workspace

OK, REFUSED = 0, 1


def _analysis(path: str) -> Analysis:
    text = read_source(path)
    if isinstance(text, SourceRefusal):
        raise Refused(text.name, text.message)
    return Workspace(one_shot=True).analyze(path, text)


def _refused(a: Analysis, diags: list[Diagnostic], as_json: bool) -> int:
    if as_json:
        body = {
            "file": a.path,
            "ok": False,
            "refusals": [diagnostic_json(d, a.text) for d in diags],
        }
        print(json.dumps(body, indent=2))
    else:
        show_refusals(diags, a)
    return REFUSED


def _softmax(z: np.ndarray) -> np.ndarray:
    """float32 softmax over the last axis (the classes), the maximum subtracted first."""
    e = np.exp(z - z.max(axis=-1, keepdims=True)).astype(np.float32)
    return (e / e.sum(axis=-1, keepdims=True, dtype=np.float32)).astype(np.float32)


def cmd_predict(args: argparse.Namespace) -> int:
    if (args.checkpoint is None) == (args.params is None):
        raise Refused("bad-argument", "give the parameters by --checkpoint CK or --params P")
    a = _analysis(args.file)
    program, diags = a.program(args.system)
    if program is None:
        return _refused(a, diags, args.json)
    from alpha_cli.run_view import run_with_progress
    from alpha_core.build.executables import build_program  # LLVM loads when predict builds

    with tempfile.TemporaryDirectory(prefix="alpha-predict-") as tmp:
        try:
            result = build_program(program, Path(tmp), "x86_64")
        except LinkError as e:
            return _refused(a, [Diagnostic(e.name, e.message, None)], args.json)
        raw = Path(tmp) / "outputs.npy"
        given = ["--params", str(Path(args.params).resolve())] if args.params else []
        if args.checkpoint:
            given = ["--resume", str(Path(args.checkpoint).resolve())]
        command = [
            result.executables[0].path,
            *given,
            "--predict",
            str(Path(args.input).resolve()),
            "--predict-out",
            str(raw),
        ]
        [outcome] = run_with_progress([("main", command)], 0, quiet=True)
        if outcome.exit_code != 0:
            raise Refused(outcome.refusal or "role-crashed", outcome.message or "")
        outputs = np.load(raw)
    rows = outputs.shape[0]
    classes = program.data.label_kind == "class"
    per = program.data.outputs
    positions = outputs.shape[1] // per
    header: list[str]
    if classes:
        logits = outputs.reshape(rows, positions, per)
        probs = _softmax(logits)
        labels = logits.argmax(axis=-1)  # the first maximum, as the runtime's accuracy takes it
        if positions == 1:
            header = ["class", *(f"p_{k}" for k in range(per))]
        else:
            header = [f"class_{j}" for j in range(positions)]
            header += [f"p_{j}_{k}" for j in range(positions) for k in range(per)]
        table = [
            [str(int(c)) for c in labels[r]] + [f"{float(v):.9g}" for v in probs[r].ravel()]
            for r in range(rows)
        ]
        array = probs if positions > 1 else probs[:, 0, :]
    else:
        header = [f"y_{k}" for k in range(per)]
        table = [[f"{float(v):.9g}" for v in outputs[r]] for r in range(rows)]
        array = outputs
    text = ",".join(header) + "\n" + "".join(",".join(r) + "\n" for r in table)
    if args.output:
        target = Path(args.output)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.suffix == ".npy":
                np.save(target, array.astype(np.float32))
            else:
                target.write_text(text)
        except OSError as e:
            raise Refused("predict-input-unreadable", f"cannot write {target}: {e}") from None
    if args.json:
        print(
            json.dumps(
                {
                    "file": a.path,
                    "ok": True,
                    "rows": rows,
                    "output": args.output,
                    "columns": header,
                },
                indent=2,
            )
        )
    elif args.output:
        out.print(f"predicted {rows:,} rows → {escape(args.output)}", soft_wrap=True)
    else:
        print(text, end="")
    return OK


def _layout(args: argparse.Namespace, path: Path) -> tuple[list[X.Slot], str]:
    if args.source:
        a = _analysis(args.source)
        program, diags = a.program(args.system)
        if program is None:
            show_refusals(diags, a)
            raise Refused(diags[0].name if diags else "no-system", f"{args.source} does not check")
        return X.layout_of_program(program), f"system {program.name} of {args.source}"
    found = X.layout_beside(path)
    if found is None:
        raise Refused(
            "export-layout-unknown",
            f"{path} gives no tensor names and shapes and no build manifest "
            f"({X.MANIFEST}) naming them is beside it: give the system with --source FILE.alpha",
        )
    return found[0], str(found[1])


def cmd_export(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if path.is_dir():
        try:
            ckpt = read_checkpoint(path)
        except CheckpointError as e:
            raise Refused(e.name, e.message) from None
        values = ckpt.values("params").astype(np.float32)
        names = [t.name for t in ckpt.tensors]
    elif path.is_file():
        size = path.stat().st_size
        if path.suffix != ".params" or size % 4:
            raise Refused(
                "export-layout-unknown",
                f"{path} is not a parameter file (.params: float32 values) or a checkpoint folder",
            )
        values = np.fromfile(path, dtype="<f4")
        names = []
    else:
        raise Refused("export-layout-unknown", f"{path} does not exist")
    layout, source = _layout(args, path)
    if names and names != [s.name for s in layout]:
        raise Refused(
            "export-layout-unknown",
            f"the capture's tensors ({', '.join(names)}) are not those of {source} "
            f"({', '.join(s.name for s in layout)})",
        )
    try:
        arrays = X.tensors(values, layout, str(path))
    except X.ExportRefused as e:
        raise Refused(e.name, e.message) from None
    target = Path(args.output) if args.output else Path(f"{path.stem or path.name}.{args.format}")
    try:
        X.write(arrays, args.format, target)
    except OSError as e:
        raise Refused("output-unwritable", f"cannot write {target}: {e}") from None
    if args.json:
        listed = [{"name": n, "shape": list(v.shape)} for n, v in arrays.items()]
        body = {"path": str(path), "ok": True, "output": str(target), "tensors": listed}
        print(json.dumps(body, indent=2))
        return OK
    for name, v in arrays.items():
        out.print(f"{escape(name):>16}  f32{list(v.shape)}")
    out.print(
        f"wrote {escape(str(target))} ({args.format}; names and shapes from {escape(source)})"
    )
    return OK


def add_predict_and_export(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("predict", help="run a trained system's forward pass on new inputs")
    p.add_argument("file")
    p.add_argument("--checkpoint", default=None, help="a checkpoint folder or capture")
    p.add_argument("--params", default=None, help="a .params file")
    p.add_argument("--input", required=True, help="CSV rows of features, or a float32 .npy")
    p.add_argument("-o", "--output", default=None, help="a .csv or .npy file (default: stdout)")
    p.add_argument("--system", default=None)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_predict)
    e = sub.add_parser("export", help="write parameters by name and shape (npz, safetensors)")
    e.add_argument("path", help="a .params file or a checkpoint folder or capture")
    e.add_argument(
        "--format", choices=X.FORMATS, required=True, help="a NumPy archive or a safetensors file"
    )
    e.add_argument(
        "-o",
        "--output",
        default=None,
        help="the file to write (default: PATH's name with .npz or .safetensors, here)",
    )
    e.add_argument("--source", default=None, help="the .alpha file that names the tensors")
    e.add_argument("--system", default=None)
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=cmd_export)
