"""The data sources people have (issue 26, item 1): NumPy arrays (`npy`, `npz`), CSV with a
header and a named label column, and token files. Each trains to the same SHA-256 as the
headerless CSV of the same values; every malformed file is refused by the same name and message
in `alpha check` and in an executable built for those very bytes (the checker's memo and the
digest make the executable's own checks reachable only so, as tests/test_check_data_rows.py
does for CSV rows)."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import build, cli, program_of, run_exe

from alpha_core.workspace.analysis import Workspace

ROWS, FEATURES, CLASSES = 24, 6, 3


def _system(data: str, features: int = FEATURES, classes: int = CLASSES, batch: int = 4) -> str:
    return f"""system tiny {{
  data train: {data}
  batch {batch} leaves 2 shuffle(seed: 3)
  param w: f32[{features}, {classes}] = normal(0.0, 0.1, seed: 1)
  param b: f32[{classes}] = zeros
  fn model(x: f32[B, {features}]) -> f32[B, {classes}] {{
    return x @ w + b
  }}
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.05)
  steps 6
}}
"""


def _values() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    x = (rng.integers(-400, 400, size=(ROWS, FEATURES)) / 16).astype(np.float32)  # exact decimals
    y = (np.arange(ROWS) % CLASSES).astype(np.int64)
    return x, y


def _csv(x: np.ndarray, y: np.ndarray, label_first: bool = False) -> bytes:
    lines = []
    for row, label in zip(x, y, strict=True):
        fields = [repr(float(v)) for v in row]
        lines.append(",".join([str(label), *fields] if label_first else [*fields, str(label)]))
    return ("\n".join(lines) + "\n").encode()


def _npy(a: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, a)
    return out.getvalue()


def _npz(**arrays: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.savez(out, **arrays)  # type: ignore[arg-type]
    return out.getvalue()


def _params_sha(source: str, files: dict[str, bytes], tmp_path: Path) -> str:
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    program = program_of(source, tmp_path / "tiny.alpha")
    rc, events, stderr = run_exe(
        build(program, tmp_path / "build").executables[0].path,
        "--params-out",
        str(tmp_path / "p"),
    )
    assert rc == 0, stderr
    done = events[-1]
    assert done["event"] == "done", events
    return str(done["params_sha256"])


def test_every_source_trains_to_the_csvs_bits(tmp_path: Path) -> None:
    x, y = _values()
    sha: dict[str, str] = {}
    cases = {
        "csv": ('table("d.csv", features: 6, classes: 3, holdout: 4)', {"d.csv": _csv(x, y)}),
        "header": (
            'table("h.csv", header: true, label: kind, classes: 3, holdout: 4)',
            {
                "h.csv": b"kind,a,b,c,d,e,f\n" + _csv(x, y, label_first=True),
            },
        ),
        "first": (
            'table("f.csv", features: 6, label: first, classes: 3, holdout: 4)',
            {"f.csv": _csv(x, y, label_first=True)},
        ),
        "npy": (
            'npy("x.npy", "y.npy", classes: 3, holdout: 4)',
            {"x.npy": _npy(x), "y.npy": _npy(y)},
        ),
        "npy-images": (  # features of several axes are flattened in C order
            'npy("x.npy", "y.npy", classes: 3, holdout: 4)',
            {"x.npy": _npy(x.reshape(ROWS, 1, 2, 3)), "y.npy": _npy(y.astype(np.uint8))},
        ),
        "npz": (
            'npz("d.npz", x: images, y: labels, classes: 3, holdout: 4)',
            {"d.npz": _npz(images=x, labels=y.astype(np.int32))},
        ),
    }
    for name, (data, files) in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        sha[name] = _params_sha(_system(data), files, folder)
    assert len(set(sha.values())) == 1, sha


def test_a_token_file_trains_as_the_table_of_its_windows(tmp_path: Path) -> None:
    """nanoGPT's format: row i reads tokens i*L … i*L+L-1 and predicts the next L."""
    length, vocab = 4, 7
    tokens = (np.arange(4 * 10 + 3) * 5 % vocab).astype(np.uint16)
    rows = (len(tokens) - 1) // length
    source = """system seq {{
  data train: {data}
  batch 4 leaves 2
  param e: f32[7, 5] = normal(0.0, 0.3, seed: 1)
  param w: f32[5, 7] = normal(0.0, 0.3, seed: 2)
  fn model(x: f32[B, 4]) -> f32[B, 4, 7] {{
    return embed(e, x) @ w
  }}
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 5
}}
"""
    table = b"".join(
        (
            ",".join(str(int(t)) for t in tokens[r * length : r * length + length])
            + ","
            + ",".join(str(int(t)) for t in tokens[r * length + 1 : r * length + length + 1])
            + "\n"
        ).encode()
        for r in range(rows)
    )
    shas = []
    for name, data, files in [
        (
            "csv",
            'table("t.csv", features: 4, classes: 7, positions: 4, tokens: 7, holdout: 2)',
            {"t.csv": table},
        ),
        ("u16", 'tokens("t.bin", length: 4, tokens: 7, holdout: 2)', {"t.bin": tokens.tobytes()}),
        (
            "u32",
            'tokens("t.bin", length: 4, tokens: 7, dtype: u32, holdout: 2)',
            {"t.bin": tokens.astype("<u4").tobytes()},
        ),
    ]:
        folder = tmp_path / name
        folder.mkdir()
        shas.append(_params_sha(source.format(data=data), files, folder))
    assert len(set(shas)) == 1, shas


# ---- malformed files: the same refusal in check and in the executable -------------------------

X, Y = _values()
NPY_SOURCE = _system('npy("x.npy", "y.npy", classes: 3, holdout: 4)')
NPZ_SOURCE = _system('npz("d.npz", classes: 3, holdout: 4)')
TOKENS_SOURCE = """system seq {
  data train: tokens("t.bin", length: 6, tokens: 3, holdout: 1)
  batch 2 leaves 1
  param e: f32[3, 4] = normal(0.0, 0.3, seed: 1)
  param w: f32[4, 3] = normal(0.0, 0.3, seed: 2)
  fn model(x: f32[B, 6]) -> f32[B, 6, 3] {
    return embed(e, x) @ w
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 2
}
"""


def _fortran() -> bytes:
    return _npy(np.asfortranarray(X))


def _compressed() -> bytes:
    out = io.BytesIO()
    np.savez_compressed(out, x=X, y=Y)
    return out.getvalue()


def _header_v2() -> bytes:
    b = bytearray(_npy(X))
    return bytes(b[:6]) + b"\x02\x00" + bytes(b[8:])


# id, source, the files, (refusal name, the message's tail after the path)
ARRAY_CASES: list[tuple[str, str, dict[str, bytes], str, str]] = [
    ("npy-not-npy", NPY_SOURCE, {"x.npy": b"1,2,3\n", "y.npy": _npy(Y)},
     "data-bad-header", "x.npy: not a NumPy .npy array (no \\x93NUMPY magic)"),
    ("npy-version", NPY_SOURCE, {"x.npy": b"\x93NUMPY\x09\x00" + _npy(X)[8:], "y.npy": _npy(Y)},
     "data-bad-header", "x.npy: NumPy format version 9.0 is not 1.0, 2.0 or 3.0"),
    ("npy-v2-cut", NPY_SOURCE, {"x.npy": _header_v2(), "y.npy": _npy(Y)},
     "data-bad-header", "x.npy: the array header is cut short"),
    ("npy-header-cut", NPY_SOURCE, {"x.npy": _npy(X)[:40], "y.npy": _npy(Y)},
     "data-bad-header", "x.npy: the array header is cut short"),
    ("npy-header-garbled", NPY_SOURCE,
     {"x.npy": _npy(X).replace(b"'shape'", b"'shap_'"), "y.npy": _npy(Y)},
     "data-bad-header", "x.npy: the array header is not a dictionary of 'descr', "
     "'fortran_order' and 'shape'"),
    ("npy-fortran", NPY_SOURCE, {"x.npy": _fortran(), "y.npy": _npy(Y)},
     "data-bad-header", "x.npy: the array is in Fortran order; save "
     "numpy.ascontiguousarray(a) instead"),
    ("npy-float64", NPY_SOURCE, {"x.npy": _npy(X.astype(np.float64)), "y.npy": _npy(Y)},
     "data-wrong-dtype", "x.npy: features of dtype '<f8'; the features may be '<f4' (float32), "
     "'|u1' (uint8), '<u2' (uint16), '<i4' (int32)"),
    ("npy-label-dtype", NPY_SOURCE, {"x.npy": _npy(X), "y.npy": _npy(Y.astype(np.float64))},
     "data-wrong-dtype", "y.npy: labels of dtype '<f8'; the labels may be '|u1' (uint8), "
     "'<u2' (uint16), '<i4' (int32), '<i8' (int64), '<f4' (float32)"),
    ("npy-truncated", NPY_SOURCE, {"x.npy": _npy(X)[:-4], "y.npy": _npy(Y)},
     "data-wrong-size", "x.npy: shape (24, 6) of '<f4' holds 576 bytes, but 572 bytes follow "
     "the header"),
    ("npy-padded", NPY_SOURCE, {"x.npy": _npy(X) + b"\0", "y.npy": _npy(Y)},
     "data-wrong-size", "x.npy: shape (24, 6) of '<f4' holds 576 bytes, but 577 bytes follow "
     "the header"),
    ("npy-one-axis", NPY_SOURCE, {"x.npy": _npy(X.reshape(-1)), "y.npy": _npy(Y)},
     "data-wrong-shape", "x.npy: features of shape (144,); they need at least 2 axes (rows, "
     "features…)"),
    ("npy-rows-differ", NPY_SOURCE, {"x.npy": _npy(X), "y.npy": _npy(Y[:20])},
     "data-wrong-shape", "y.npy: 20 rows of labels, but 24 rows of features"),
    ("npy-label-range", NPY_SOURCE, {"x.npy": _npy(X), "y.npy": _npy(np.where(Y == 2, 5, Y))},
     "data-malformed", "y.npy: row 2 label 5 is not a class index in 0..2"),
    ("npy-nan", NPY_SOURCE,
     {"x.npy": _npy(np.where(np.arange(X.size).reshape(X.shape) == 9, np.nan, X).astype(
         np.float32)), "y.npy": _npy(Y)},
     "data-malformed", "x.npy: row 1 feature 3 is not a finite number"),
    ("npz-missing-key", NPZ_SOURCE, {"d.npz": _npz(a=X, b=Y)},
     "data-key-missing", "d.npz has no array `x` (it holds `a`, `b`)"),
    ("npz-compressed", NPZ_SOURCE, {"d.npz": _compressed()},
     "data-bad-archive", "d.npz: array `x` is compressed (numpy.savez_compressed); save the "
     "arrays with numpy.savez"),
    ("npz-not-zip", NPZ_SOURCE, {"d.npz": _npy(X)},
     "data-bad-archive", "d.npz: not a .npz (zip) archive"),
    ("npz-cut", NPZ_SOURCE, {"d.npz": _npz(x=X, y=Y)[200:]},
     "data-bad-archive", "d.npz: its zip directory is cut short or inconsistent"),
    ("npz-float64", NPZ_SOURCE, {"d.npz": _npz(x=X.astype(np.float64), y=Y)},
     "data-wrong-dtype", "d.npz array `x`: features of dtype '<f8'; the features may be '<f4' "
     "(float32), '|u1' (uint8), '<u2' (uint16), '<i4' (int32)"),
    ("tokens-odd-size", TOKENS_SOURCE, {"t.bin": b"\x01\x00" * 20 + b"\x01"},
     "data-wrong-size", "t.bin: 41 bytes is not a whole number of uint16 tokens (2 bytes each)"),
    ("tokens-too-few", TOKENS_SOURCE, {"t.bin": b"\x01\x00" * 6},
     "data-wrong-shape", "t.bin: 6 tokens; a window of length 6 needs 7"),
    ("tokens-out-of-range", TOKENS_SOURCE,
     {"t.bin": b"\x01\x00" * 9 + b"\x07\x00" + b"\x00\x00" * 9},
     "data-malformed", "t.bin: token 9 is 7, not a token in 0..2"),
]  # fmt: skip


def _good_files(source: str) -> dict[str, bytes]:
    """Files that check clean for the case's source (the shape the executable expects)."""
    if source is NPY_SOURCE:
        return {"x.npy": _npy(X), "y.npy": _npy(Y)}
    if source is NPZ_SOURCE:
        return {"d.npz": _npz(x=X, y=Y)}
    return {"t.bin": (np.arange(19) % 3).astype(np.uint16).tobytes()}


def _executable_for(source: str, files: dict[str, bytes], tmp_path: Path) -> str:
    """An executable built from good files, then given the bad files' digests and sizes, as a
    checker that let them through would have compiled them."""
    for name, content in _good_files(source).items():
        (tmp_path / name).write_bytes(content)
    program = program_of(source, tmp_path / "tiny.alpha")
    d = program.data
    first = files.get("x.npy", files.get("d.npz", files.get("t.bin", b"")))
    spec = dataclasses.replace(d, sha256=hashlib.sha256(first).hexdigest(), size=len(first))
    if "y.npy" in files:
        y = files["y.npy"]
        spec = dataclasses.replace(
            spec, labels_sha256=hashlib.sha256(y).hexdigest(), labels_size=len(y)
        )
    program = dataclasses.replace(program, data=spec)
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    return build(program, tmp_path / "build").executables[0].path


@pytest.mark.parametrize(
    ("source", "files", "name", "tail"),
    [c[1:] for c in ARRAY_CASES],
    ids=[c[0] for c in ARRAY_CASES],
)
def test_check_and_executable_refuse_alike(
    tmp_path: Path, source: str, files: dict[str, bytes], name: str, tail: str
) -> None:
    exe = _executable_for(source, files, tmp_path)
    rc, events, _ = run_exe(exe, "--params-out", str(tmp_path / "p"))
    assert rc == 3 and events[-1]["event"] == "refused", events
    (tmp_path / "tiny.alpha").write_text(source)
    checked = cli("check", "--json", str(tmp_path / "tiny.alpha"))
    assert checked.returncode == 1, checked.stdout
    [refusal] = json.loads(checked.stdout)["refusals"]
    expected = f"{tmp_path}/{tail}"
    assert (events[-1]["name"], events[-1]["message"]) == (name, expected)
    assert (refusal["name"], refusal["message"]) == (name, expected)
    assert refusal["span"]["line"] == 2


def _check(source: str, files: dict[str, bytes]) -> list[tuple[str, str]]:
    ws = Workspace(read_file={f"/p/{k}": v for k, v in files.items()}.get)
    analysis = ws.analyze("/p/tiny.alpha", source)
    diags = analysis.diagnostics or analysis.program()[1]
    return [(d.name, d.message) for d in diags]


def test_header_refusals_and_the_headerless_hint() -> None:
    x, y = _values()
    body = _csv(x, y)
    named = _system('table("h.csv", header: true, label: kind, classes: 3, holdout: 4)')
    assert _check(named, {"h.csv": b"a,b,c,d,e,f,kind\n" + body}) == []
    [(name, message)] = _check(named, {"h.csv": b"a,b,c,d,e,f,label\n" + body})
    assert name == "data-bad-header"
    assert "no column is named `kind` (the header names `a`, `b`" in message
    [(name, message)] = _check(
        _system('table("h.csv", features: 6, header: true, classes: 3)'),
        {"h.csv": b"a,b,c,d,e,f\n" + body},
    )
    assert (name, message) == (
        "data-bad-header",
        "/p/h.csv line 1: the header has 6 columns, expected 7 (6 features + 1 label)",
    )
    # a header in a headerless table says so
    [(name, message)] = _check(
        _system('table("h.csv", features: 6, classes: 3)'), {"h.csv": b"a,b,c,d,e,f,y\n" + body}
    )
    assert name == "data-malformed"
    assert message == (
        "/p/h.csv line 1: column 1 is not a finite decimal number (a header line? give the "
        "table `header: true`)"
    )
    [(name, message)] = _check(
        _system('table("h.csv", label: kind, features: 6, classes: 3)'), {"h.csv": body}
    )
    assert name == "bad-argument" and "needs `header: true`" in message


def test_an_unknown_source_lists_the_known_ones() -> None:
    [(name, message)] = _check(_system('nyp("x.npy", "y.npy", classes: 3)'), {})
    assert name == "unknown-name"
    assert message == (
        "unknown data source `nyp`; the sources are `table`, `npy`, `npz`, `tokens`, "
        "`synthetic`, `sequences`"
    )


@pytest.mark.parametrize("cut", [0, 1, 9, 10, 30, 60, 100, 127, 128, 200, 500, 700])
def test_truncated_arrays_are_refused_by_name(cut: int) -> None:
    """A file cut anywhere is refused by one of the data names, never accepted or crashed on."""
    for source, files in [
        (NPY_SOURCE, {"x.npy": _npy(X)[:cut], "y.npy": _npy(Y)}),
        (NPZ_SOURCE, {"d.npz": _npz(x=X, y=Y)[:cut]}),
        (NPZ_SOURCE, {"d.npz": _npz(x=X, y=Y)[cut + 1 :]}),
    ]:
        found = _check(source, files)
        assert len(found) == 1 and found[0][0].startswith("data-"), found


def test_random_header_bytes_never_crash_the_checker() -> None:
    rng = np.random.default_rng(1)
    good = bytearray(_npy(X))
    with zipfile.ZipFile(io.BytesIO(_npz(x=X, y=Y))) as z:
        assert sorted(z.namelist()) == ["x.npy", "y.npy"]
    for _ in range(300):
        bad = bytearray(good)
        for at in rng.integers(0, 128, size=3):
            bad[at] = int(rng.integers(0, 256))
        found = _check(NPY_SOURCE, {"x.npy": bytes(bad), "y.npy": _npy(Y)})
        assert found == [] or (len(found) == 1 and found[0][0].startswith("data-")), found


def test_another_data_file_is_refused_at_build(tmp_path: Path) -> None:
    """`--data` with other bytes is refused before anything is compiled: the data is part of
    the run's identity. The same bytes at another path build."""
    x, y = _values()
    (tmp_path / "d.csv").write_bytes(_csv(x, y))
    (tmp_path / "other.csv").write_bytes(_csv(x[::-1].copy(), y))
    (tmp_path / "moved.csv").write_bytes(_csv(x, y))
    source = tmp_path / "tiny.alpha"
    source.write_text(_system('table("d.csv", features: 6, classes: 3, holdout: 4)'))
    proc = cli(
        "build", str(source), "-o", str(tmp_path / "out"), "--data", str(tmp_path / "other.csv")
    )
    assert proc.returncode == 1
    assert "error[data-digest-mismatch]" in proc.stderr
    assert "the data is part of the run's identity" in proc.stderr
    assert not (tmp_path / "out" / "tiny").exists()
    proc = cli(
        "build", str(source), "-o", str(tmp_path / "ok"), "--data", str(tmp_path / "moved.csv")
    )
    assert proc.returncode == 0, proc.stderr


def test_the_digits_archive_trains_as_the_digits_table(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parent.parent / "examples"
    text = (examples / "digits.alpha").read_text()
    table = 'table("data/digits.csv", features: 64, label: last, classes: 10, holdout: 297)'
    assert table in text
    shas: list[object] = []
    for data in (table, 'npz("data/digits.npz", classes: 10, holdout: 297)'):
        program = program_of(text.replace(table, data), examples / f"_t{len(shas)}.alpha")
        (examples / f"_t{len(shas)}.alpha").unlink()
        program = dataclasses.replace(program, steps=20)
        out = tmp_path / str(len(shas))
        rc, events, stderr = run_exe(
            build(program, out).executables[0].path, "--params-out", str(out / "p")
        )
        assert rc == 0, stderr
        shas.append(events[-1]["params_sha256"])
    assert shas[0] == shas[1]
