"""The checker reads every row of a table by the runtime's rules (issue 9, item 15). It used to
look at the first and last lines only, so a NaN, an inf, a wrong column count, a header line or
an out-of-range label in the middle passed `alpha check` and `alpha build` and was refused only
when the executable started.

For each file of the table below, the real `alpha check` and a real executable built for those
very bytes (its digest compiled in, as a build would if the checker let the file through) give
the same answer: the same refusal name and the same message, line number included, or both
accept the file with the same row count. Blank lines (empty, or spaces and tabs only) are no row
on either side."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path

import pytest
import pytest_lsp
from conftest import build, cli, program_of, run_exe
from test_lsp_session import CONFIG, Client, init_params

from alpha_core.data import csv_rows
from alpha_core.data.spec import DataSpec
from alpha_core.workspace.analysis import Workspace

SOURCE = """system tiny {
  data train: table("d.csv", features: 4, label: last, classes: 3, holdout: 1)
  batch 2 leaves 1
  param w: f32[4, 3] = normal(0.0, 0.1, seed: 1)
  param b: f32[3] = zeros
  fn model(x: f32[B, 4]) -> f32[B, 3] {
    return x @ w + b
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 2
}
"""
GOOD = [b"0.1,0.2,0.3,0.4,0", b"1,2,3,4,1", b"-1.5,2e-3,+3.,.25,2", b"4,3,2,1,0"]


def _file(middle: bytes) -> bytes:
    """Two good rows, the line under test as line 3, then two good rows."""
    return b"\n".join([*GOOD[:2], middle, *GOOD[2:]]) + b"\n"


NOT_A_NUMBER = "is not a finite decimal number"
COUNT = "columns, expected 5 (4 features + 1 label)"
# id, the bytes, the runtime's verdict: (line, what it says after `PATH line N: `), or None
CASES: list[tuple[str, bytes, tuple[int, str] | None]] = [
    ("nan", _file(b"1,nan,3,4,0"), (3, f"column 2 {NOT_A_NUMBER}")),
    ("inf", _file(b"1,2,inf,4,0"), (3, f"column 3 {NOT_A_NUMBER}")),
    ("overflows-float32", _file(b"1,2,3,3.40282357e38,0"), (3, f"column 4 {NOT_A_NUMBER}")),
    ("too-few-columns", _file(b"1,2,3,0"), (3, f"4 {COUNT}")),
    ("too-many-columns", _file(b"1,2,3,4,0,5"), (3, f"6 {COUNT}")),
    ("header-in-the-middle", _file(b"a,b,c,d,label"), (3, f"column 1 {NOT_A_NUMBER}")),
    ("label-out-of-range", _file(b"1,2,3,4,3"), (3, "label 3 is not a class index in 0..2")),
    ("label-negative", _file(b"1,2,3,4,-1"), (3, "label -1 is not a class index in 0..2")),
    ("label-fractional", _file(b"1,2,3,4,1.5"), (3, "label 1.5 is not a class index in 0..2")),
    ("nul-byte", _file(b"1,2,3,4,0\0"), (3, "contains a NUL byte")),
    ("empty-field", _file(b"1,,3,4,0"), (3, f"column 2 {NOT_A_NUMBER}")),
    ("unterminated-last-line", _file(b"1,2,3,4,0") + b"1,2", (6, f"2 {COUNT}")),
    # accepted by both: blank lines are no row; FLT_MAX's halfway point rounds to even (inf)
    # but the decimal just below it is the largest float32, exactly as strtof rounds it
    ("blank-line", _file(b""), None),
    ("whitespace-only-line", _file(b" \t "), None),
    ("whitespace-and-cr", _file(b"\t\r"), None),
    ("largest-float32", _file(b"1,2,3,3.4028235677973366e38,0"), None),
    ("label-rounds-to-integer", _file(b"1,2,3,4,2.00000001"), None),
]  # fmt: skip


def _rows_by_hand(content: bytes) -> int:
    """The rows of a file that has no fault: its lines that hold something besides blanks."""
    return sum(1 for line in content.split(b"\n") if line.strip(b" \t\r"))


def _executable_for(content: bytes, tmp_path: Path) -> str:
    """An executable built for exactly these bytes: the program checked against good rows of
    the same count, then given this file's digest (and size), as a checker that let the file
    through would have compiled it."""
    data = tmp_path / "d.csv"
    rows = _rows_by_hand(content)
    data.write_bytes(b"\n".join((GOOD * rows)[:rows]) + b"\n")
    program = program_of(SOURCE, tmp_path / "tiny.alpha")
    data.write_bytes(content)
    spec = dataclasses.replace(program.data, sha256=hashlib.sha256(content).hexdigest())
    if "size" in {f.name for f in dataclasses.fields(DataSpec)}:
        spec = dataclasses.replace(spec, size=len(content))  # type: ignore[call-arg]
    program = dataclasses.replace(program, data=spec)
    return build(program, tmp_path / "build").executables[0].path


@pytest.mark.parametrize(("content", "verdict"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_check_and_executable_agree_on_every_row(
    tmp_path: Path, content: bytes, verdict: tuple[int, str] | None
) -> None:
    source = tmp_path / "tiny.alpha"
    data = tmp_path / "d.csv"
    if verdict is None:
        source.write_text(SOURCE)
        data.write_bytes(content)
        checked = cli("check", "--json", str(source))
        assert checked.returncode == 0, checked.stdout
        program = program_of(SOURCE, source)
        assert program.data.rows == _rows_by_hand(content)
        rc, events, stderr = run_exe(build(program, tmp_path / "build").executables[0].path)
        assert rc == 0 and events[-1]["event"] == "done", stderr
        return
    exe = _executable_for(content, tmp_path)
    rc, events, _ = run_exe(exe, "--params-out", str(tmp_path / "p"))
    assert rc == 3 and events[-1]["event"] == "refused", events
    checked = cli("check", "--json", str(source))
    assert checked.returncode == 1
    [refusal] = json.loads(checked.stdout)["refusals"]
    line, says = verdict
    expected = f"{data} line {line}: {says}"
    assert (events[-1]["name"], events[-1]["message"]) == ("data-malformed", expected)
    assert (refusal["name"], refusal["message"]) == ("data-malformed", expected)
    # the checker points at the data item's path, where the file is named
    assert refusal["span"]["line"] == 2


def test_build_refuses_a_bad_row_before_compiling(tmp_path: Path) -> None:
    source = tmp_path / "tiny.alpha"
    source.write_text(SOURCE)
    (tmp_path / "d.csv").write_bytes(_file(b"1,2,3,4,7"))
    proc = cli("build", str(source), "-o", str(tmp_path / "out"))
    assert proc.returncode == 1
    assert "error[data-malformed]" in proc.stderr and "line 3: label 7 is not" in proc.stderr
    assert not (tmp_path / "out" / "tiny").exists()


def test_rows_are_read_once_per_file_digest(tmp_path: Path) -> None:
    """An editor re-checks a system on each edit: the rows of an unchanged file are read once,
    a changed file (another digest) once more."""
    source = tmp_path / "tiny.alpha"
    data = tmp_path / "d.csv"
    data.write_bytes(_file(b"4,4,4,4,1") * 50)
    ws = Workspace()
    before = csv_rows.READS.tables
    for steps in range(2, 12):  # ten edits of the system: each one a fresh check of it
        text = SOURCE.replace("steps 2", f"steps {steps}")
        assert ws.analyze(str(source), text).diagnostics == []
    assert csv_rows.READS.tables - before <= 1  # 0 when an earlier test read these bytes
    data.write_bytes(_file(b"4,4,4,4,nan"))
    [refusal] = ws.analyze(str(source), SOURCE).diagnostics
    assert refusal.name == "data-malformed" and re.search(r"line 3: column 5 ", refusal.message)
    assert csv_rows.READS.tables - before <= 2


STRTOF = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* each line of stdin: the bits of musl's strtof of it, as the runtime reads a field */
int main(void) {
    char line[512];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        float v = strtof(line, NULL);
        unsigned bits;
        memcpy(&bits, &v, sizeof bits);
        printf("%08x\n", bits);
    }
    return 0;
}
"""


def _hard_decimals() -> list[str]:
    """Decimals at and next to the halfway points between neighbouring float32s (where a double
    rounded again to float32 can differ from strtof), the overflow threshold, subnormals, and
    ordinary numbers."""
    import random
    import struct
    from decimal import Decimal, getcontext
    from fractions import Fraction

    getcontext().prec = 220
    rng = random.Random(9)
    out: list[str] = ["3.4028235677973366e38", "3.40282357e38", "1e-46", "7.0064923216e-46"]

    def exact(q: Fraction) -> Decimal:
        return Decimal(q.numerator) / Decimal(q.denominator)

    for _ in range(600):
        bits = rng.choice(
            [rng.randrange(0x00000001, 0x7F7FFFFF), rng.randrange(0x3F000000, 0x41000000)]
        )
        a = struct.unpack("<f", struct.pack("<I", bits))[0]
        b = struct.unpack("<f", struct.pack("<I", bits + 1))[0]
        mid = exact((Fraction(a) + Fraction(b)) / 2)
        nudge = Decimal(10) ** (mid.adjusted() - rng.randrange(18, 40))
        out += [f"{mid:e}", f"{mid + nudge:e}", f"{mid - nudge:e}"]
    limit = exact(Fraction(2**128 - 2**103))
    out += [f"{limit:e}", f"{limit - Decimal(10) ** 10:e}", f"{limit + Decimal(10) ** 10:e}"]
    out += [f"{rng.uniform(-1e6, 1e6):.{rng.randrange(1, 20)}f}" for _ in range(300)]
    return out


def test_fields_read_as_musl_strtof_reads_them(tmp_path: Path) -> None:
    """The checker's float32 of a field is musl's strtof's, bit for bit, including the halfway
    cases where rounding the double once more would differ (a real strtof, linked as the
    runtime is)."""
    import struct
    import subprocess

    from alpha_core.link.link import LINK_FLAGS
    from alpha_core.link.toolchain import run_zig

    (tmp_path / "strtof.c").write_text(STRTOF)
    run_zig(
        ["cc", "-target", "x86_64-linux-musl", *LINK_FLAGS, "strtof.c", "-o", "strtof"], tmp_path
    )
    decimals = _hard_decimals()
    done = subprocess.run(
        [str(tmp_path / "strtof")],
        input="\n".join(decimals) + "\n",
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    for text, hex_bits in zip(decimals, done.stdout.split(), strict=True):
        theirs = struct.unpack("<f", bytes.fromhex(hex_bits)[::-1])[0]
        ours = csv_rows.field_float32(text.encode())
        if theirs in (float("inf"), float("-inf")):
            assert ours is None, text
        else:
            assert ours is not None and struct.pack("<f", ours) == struct.pack("<f", theirs), text


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: Client):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(init_params())
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio(loop_scope="module")
async def test_the_editor_shows_a_bad_row_in_the_middle(client: Client, tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    data.write_bytes(_file(b"1,2,3,4,0") + _file(b"1,2,inf,4,0"))
    uri = (tmp_path / "tiny.alpha").as_uri()
    [diag] = await client.published_for(uri, client.open(uri, SOURCE))
    assert diag.code == "data-malformed"
    assert diag.message == f"{data} line 8: column 3 is not a finite decimal number"
