"""The runtime as an executable: built through link_executable from fixture kernels
(tests/fixtures/runtime/), then run. Covers the static build, reproducibility, the data digest,
named refusals, events, batch selection and the combine tree's order."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from alpha_core.link import LinkError, compile_c, link_executable
from alpha_core.link.batch_reference import example_rows
from alpha_core.link.toolchain import runtime_dir
from alpha_core.lower.tree import tree_combine

TARGET = "x86_64-linux-musl"
FIXTURES = Path(__file__).parent / "fixtures" / "runtime"
REPO = Path(__file__).resolve().parents[1]


# ---- building ---------------------------------------------------------------------------------


def kernels(name: str, folder: Path, target: str = TARGET) -> bytes:
    out = folder / f"{Path(name).stem}-{target}.o"
    compile_c(target, name, out, cwd=FIXTURES, include_dirs=[runtime_dir()])
    return out.read_bytes()


def program_c(**fields: object) -> str:
    text = (FIXTURES / "program.c.in").read_text()
    defaults: dict[str, object] = {
        "SYSTEM": "fixture",
        "IDENTITY": "ab" * 32,
        "SHUFFLE": 0,
        "SHUFFLE_SEED": 0,
        "DATA_KIND": 0,
        "LABEL_KIND": 0,
        "EMBEDDED_DEFINITIONS": "",
        "EMBEDDED_X": "NULL",
        "EMBEDDED_Y": "NULL",
    }
    for key, value in {**defaults, **fields}.items():
        text = text.replace(f"@{key}@", str(value))
    assert "@" not in text, re.findall(r"@\w+@", text)
    return text


def csv_bytes(x: np.ndarray, labels: np.ndarray) -> bytes:
    def number(v: np.float32) -> str:
        return np.format_float_positional(v, unique=True, trim="-")

    lines = [",".join([*map(number, row), str(int(c))]) for row, c in zip(x, labels, strict=True)]
    return ("\n".join(lines) + "\n").encode()


@dataclass
class Run:
    returncode: int
    events: list[dict[str, object]]
    stderr: str


def run(exe: Path, *args: str, cwd: Path | None = None) -> Run:
    done = subprocess.run(
        [str(exe), *args], capture_output=True, text=True, cwd=cwd, timeout=120, check=False
    )
    events = [json.loads(line) for line in done.stdout.splitlines()]
    return Run(done.returncode, events, done.stderr)


def float_of_bits(hex_bits: str) -> np.float32:
    return np.frombuffer(bytes.fromhex(hex_bits)[::-1], dtype="<f4")[0]


LINEAR = {"FEATURES": 4, "OUTPUTS": 3, "N_PARAMS": 15, "N_STATE": 15}


@dataclass
class Linear:
    exe: Path
    data: Path
    digest: str
    rows: int
    holdout: int
    steps: int


@pytest.fixture(scope="module")
def linear(tmp_path_factory: pytest.TempPathFactory) -> Linear:
    folder = tmp_path_factory.mktemp("linear")
    rng = np.random.default_rng(7)
    rows, holdout, steps = 60, 12, 20
    x = rng.normal(size=(rows, 4)).astype(np.float32)
    labels = (x[:, 0] + x[:, 1] > 0).astype(int) + (x[:, 2] > 1)
    data = folder / "train.csv"
    data.write_bytes(csv_bytes(x, labels))
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    source = program_c(
        **LINEAR,
        BATCH=12,
        LEAVES=3,
        LEAF_SIZE=4,
        STEPS=steps,
        SHUFFLE=1,
        SHUFFLE_SEED=5,
        DATA_PATH=data,
        DATA_SHA256=digest,
        ROWS=rows,
        HOLDOUT=holdout,
    )
    exe = link_executable(TARGET, kernels("linear_kernels.c", folder), source, folder / "linear")
    return Linear(exe, data, digest, rows, holdout, steps)


# ---- the executable itself --------------------------------------------------------------------


def elf_program_header_types(image: bytes) -> list[int]:
    assert image[:4] == b"\x7fELF" and image[4] == 2 and image[5] == 1  # 64-bit little-endian
    (phoff,) = struct.unpack_from("<Q", image, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", image, 0x36)
    return [struct.unpack_from("<I", image, phoff + i * phentsize)[0] for i in range(phnum)]


PT_DYNAMIC, PT_INTERP = 2, 3


def test_executable_is_static_and_small(linear: Linear) -> None:
    image = linear.exe.read_bytes()
    assert struct.unpack_from("<H", image, 0x12)[0] == 62  # EM_X86_64
    types = elf_program_header_types(image)
    assert PT_INTERP not in types and PT_DYNAMIC not in types
    assert len(image) < 200_000
    if shutil.which("file"):
        described = subprocess.run(["file", str(linear.exe)], capture_output=True, text=True)
        assert "statically linked" in described.stdout


def test_builds_are_byte_identical(linear: Linear, tmp_path: Path) -> None:
    source = program_c(
        **LINEAR,
        BATCH=12,
        LEAVES=3,
        LEAF_SIZE=4,
        STEPS=linear.steps,
        SHUFFLE=1,
        SHUFFLE_SEED=5,
        DATA_PATH=linear.data,
        DATA_SHA256=linear.digest,
        ROWS=linear.rows,
        HOLDOUT=linear.holdout,
    )
    again = link_executable(
        TARGET, kernels("linear_kernels.c", tmp_path), source, tmp_path / "elsewhere" / "again"
    )
    assert again.read_bytes() == linear.exe.read_bytes()
    other = link_executable(
        TARGET,
        kernels("linear_kernels.c", tmp_path),
        source.replace("5ull", "6ull"),
        tmp_path / "o",
    )
    assert other.read_bytes() != linear.exe.read_bytes()


def test_runtime_compiles_without_warnings(tmp_path: Path) -> None:
    for source in sorted(runtime_dir().glob("*.c")):
        compile_c(
            TARGET,
            source.name,
            tmp_path / f"{source.stem}.o",
            cwd=runtime_dir(),
            extra_flags=[
                "-Werror",
                "-Wpedantic",
                "-Wshadow",
                "-Wconversion",
                "-Wno-sign-conversion",
            ],
        )


def test_toolchain_failures_are_link_errors(tmp_path: Path) -> None:
    with pytest.raises(LinkError) as refused:
        link_executable(TARGET, b"not an object file", "int broken(void) {}", tmp_path / "x")
    assert refused.value.name == "link-failed"
    assert not (tmp_path / "x").exists()
    with pytest.raises(LinkError, match="unsupported target"):
        link_executable("riscv64-linux-musl", b"", "", tmp_path / "x")


# ---- a successful run -------------------------------------------------------------------------


def test_events_are_json_lines_and_the_params_file_matches(linear: Linear, tmp_path: Path) -> None:
    out = tmp_path / "trained.params"
    result = run(linear.exe, "--params-out", str(out))
    assert result.returncode == 0, result.stderr
    start, *steps, done = result.events
    assert start == {
        "event": "start",
        "system": "fixture",
        "identity": "ab" * 32,
        "params": 15,
        "steps": linear.steps,
        "batch": 12,
        "leaves": 3,
        "leaf_size": 4,
    }
    assert [e["step"] for e in steps] == list(range(1, linear.steps + 1))
    for event in steps:
        assert event["event"] == "step"
        assert np.float32(float(str(event["loss"]))) == float_of_bits(str(event["loss_bits"]))
    assert float(str(steps[-1]["loss"])) < float(str(steps[0]["loss"]))
    image = out.read_bytes()
    assert len(image) == 15 * 4
    assert done["event"] == "done"
    assert done["params_file"] == str(out)
    assert done["params_sha256"] == hashlib.sha256(image).hexdigest()
    assert done["final_loss_bits"] == steps[-1]["loss_bits"]
    assert done["holdout_rows"] == linear.holdout
    assert 0.5 <= float(str(done["holdout_accuracy"])) <= 1.0
    assert not list(tmp_path.glob("*.tmp"))


def test_quiet_run_and_default_params_path(linear: Linear, tmp_path: Path) -> None:
    exe = tmp_path / "role"
    shutil.copy(linear.exe, exe)
    result = run(exe, "--quiet")
    assert result.returncode == 0, result.stderr
    assert [e["event"] for e in result.events] == ["start", "done"]
    assert Path(str(result.events[-1]["params_file"])) == tmp_path / "role.params"
    assert (tmp_path / "role.params").stat().st_size == 15 * 4


def test_two_runs_give_the_same_bits(linear: Linear, tmp_path: Path) -> None:
    first = run(linear.exe, "--params-out", str(tmp_path / "a"))
    second = run(linear.exe, "--params-out", str(tmp_path / "b"))
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    assert [e.get("loss_bits") for e in first.events] == [e.get("loss_bits") for e in second.events]


# ---- refusals ---------------------------------------------------------------------------------


def assert_refused(result: Run, name: str, code: int = 3) -> str:
    assert result.returncode == code, result.stderr
    refused = result.events[-1]
    assert refused["event"] == "refused" and refused["name"] == name
    assert result.stderr.startswith(f"error[{name}]: ")
    message = str(refused["message"])
    assert result.stderr.strip() == f"error[{name}]: {message}"
    return message


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda b: b[: len(b) // 2], id="truncated"),
        pytest.param(lambda b: b.replace(b"1", b"2", 1), id="one-digit-edited"),
        pytest.param(lambda b: b + b"\n", id="blank-line-appended"),
    ],
)
def test_changed_data_is_refused_and_nothing_is_written(
    linear: Linear, tmp_path: Path, change: object
) -> None:
    changed = tmp_path / "changed.csv"
    changed.write_bytes(change(linear.data.read_bytes()))  # type: ignore[operator]
    out = tmp_path / "never.params"
    result = run(linear.exe, "--data", str(changed), "--params-out", str(out))
    message = assert_refused(result, "data-digest-mismatch")
    actual = hashlib.sha256(changed.read_bytes()).hexdigest()
    assert linear.digest in message and actual in message and str(changed) in message
    assert not list(tmp_path.glob("never*"))


def test_missing_data_is_refused(linear: Linear, tmp_path: Path) -> None:
    result = run(
        linear.exe, "--data", str(tmp_path / "absent.csv"), "--params-out", str(tmp_path / "p")
    )
    assert str(tmp_path / "absent.csv") in assert_refused(result, "data-missing")
    assert not (tmp_path / "p").exists()


def test_refusal_messages_are_escaped_json(linear: Linear, tmp_path: Path) -> None:
    odd = str(tmp_path / 'quote"back\\slash\ttab.csv')
    result = run(linear.exe, "--data", odd)
    assert odd in assert_refused(result, "data-missing")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--frobnicate"], "--frobnicate"),
        (["--data"], "--data"),
        (["--params-out"], "--params-out"),
    ],
)
def test_bad_usage_is_refused_with_exit_2(linear: Linear, args: list[str], expected: str) -> None:
    assert expected in assert_refused(run(linear.exe, *args), "usage", code=2)


def test_help(linear: Linear) -> None:
    done = subprocess.run([str(linear.exe), "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0
    assert "--params-out PATH" in done.stdout and "fixture" in done.stdout


MALFORMED = [
    pytest.param(b"1,2,3,4,0\n1,2,3,0\n", "line 2: 4 columns, expected 5", id="short-row"),
    pytest.param(b"1,2,3,4,0\n1,2,3,4,0,0\n", "line 2: 6 columns", id="long-row"),
    pytest.param(b"1,2,3,4,0\n\n1,2,3,4,3\n", "line 3: label 3 is not a class index", id="label"),
    pytest.param(b"1,2,3,4,0\n1,2,3,4,0.5\n", "line 2: label 0.5", id="fractional-label"),
    pytest.param(b"1,2,3,4,0\n1,x,3,4,0\n", "line 2: column 2 is not", id="word"),
    pytest.param(b"1,2,3,4,0\n1,nan,3,4,0\n", "line 2: column 2 is not", id="nan"),
    pytest.param(b"1,2,3,4,0\n1,1e99,3,4,0\n", "line 2: column 2 is not", id="overflow"),
    pytest.param(b"1,2,3,4,0\n", "has 1 rows, the program expects 2", id="too-few-rows"),
    pytest.param(
        b"1,2,3,4,0\n1,2,3,4,1\n1,2,3,4,2\n", "line 3: more than the 2 rows", id="too-many"
    ),
]


@pytest.mark.parametrize(("content", "expected"), MALFORMED)
def test_malformed_data_is_refused_by_line(tmp_path: Path, content: bytes, expected: str) -> None:
    data = tmp_path / "bad.csv"
    data.write_bytes(content)
    source = program_c(
        **LINEAR,
        BATCH=1,
        LEAVES=1,
        LEAF_SIZE=1,
        STEPS=1,
        DATA_PATH=data,
        DATA_SHA256=hashlib.sha256(content).hexdigest(),
        ROWS=2,
        HOLDOUT=0,
    )
    exe = link_executable(TARGET, kernels("linear_kernels.c", tmp_path), source, tmp_path / "bad")
    assert expected in assert_refused(
        run(exe, "--params-out", str(tmp_path / "p")), "data-malformed"
    )
    assert not (tmp_path / "p").exists()


def test_accepted_csv_forms(tmp_path: Path) -> None:
    content = b" 1.5 ,\t-2e-1,+3.,.25 , 2\r\n\r\n-0,1E2,0.0001,7,1.0\n"
    data = tmp_path / "ok.csv"
    data.write_bytes(content)
    source = program_c(
        **LINEAR,
        BATCH=2,
        LEAVES=1,
        LEAF_SIZE=2,
        STEPS=1,
        DATA_PATH=data,
        DATA_SHA256=hashlib.sha256(content).hexdigest(),
        ROWS=2,
        HOLDOUT=0,
    )
    exe = link_executable(TARGET, kernels("linear_kernels.c", tmp_path), source, tmp_path / "ok")
    result = run(exe, "--params-out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    assert result.events[-1]["holdout_accuracy"] is None


def test_embedded_data_digest_is_checked(tmp_path: Path) -> None:
    x = np.arange(8, dtype=np.float32)
    y = np.array([0, 1], dtype=np.float32)
    definitions = (
        f"static const float EX[] = {{{', '.join(f'{float(v)}f' for v in x)}}};\n"
        f"static const float EY[] = {{{', '.join(f'{float(v)}f' for v in y)}}};"
    )
    right = hashlib.sha256(x.astype("<f4").tobytes() + y.astype("<f4").tobytes()).hexdigest()
    fields = dict(
        **LINEAR,
        BATCH=2,
        LEAVES=2,
        LEAF_SIZE=1,
        STEPS=3,
        DATA_KIND=1,
        DATA_PATH="unused",
        ROWS=2,
        HOLDOUT=0,
        EMBEDDED_DEFINITIONS=definitions,
        EMBEDDED_X="EX",
        EMBEDDED_Y="EY",
    )
    objects = kernels("linear_kernels.c", tmp_path)
    good = link_executable(TARGET, objects, program_c(**fields, DATA_SHA256=right), tmp_path / "g")
    assert run(good, "--quiet").returncode == 0
    assert_refused(run(good, "--data", "x.csv"), "usage", code=2)
    wrong = "0" * 64
    bad = link_executable(TARGET, objects, program_c(**fields, DATA_SHA256=wrong), tmp_path / "b")
    message = assert_refused(run(bad, "--params-out", str(tmp_path / "p")), "data-digest-mismatch")
    assert right in message and wrong in message and "embedded" in message
    assert not (tmp_path / "p").exists()


def test_inconsistent_program_is_refused(tmp_path: Path, linear: Linear) -> None:
    source = program_c(
        **LINEAR, BATCH=12, LEAVES=5, LEAF_SIZE=2, STEPS=1, DATA_PATH=linear.data,
        DATA_SHA256=linear.digest, ROWS=linear.rows, HOLDOUT=0,
    )  # fmt: skip
    exe = link_executable(TARGET, kernels("linear_kernels.c", tmp_path), source, tmp_path / "e")
    assert "batch 12" in assert_refused(run(exe), "program-invalid")


def test_docs_list_every_refusal_name() -> None:
    names = re.findall(
        r'#define REFUSAL_\w+ "([a-z-]+)"', (runtime_dir() / "refusal.h").read_text()
    )
    docs = (REPO / "docs" / "runtime.md").read_text()
    assert len(names) >= 8
    for name in names:
        assert f"`{name}`" in docs


# ---- batch selection and the combine tree, made visible by the probe kernels ------------------

# Near 2^24 a float32's spacing is 2, so small values are absorbed or not depending on the
# order of the additions.
MAGNITUDES = np.array([2.0**24, -(2.0**24), 1.0, 3.25, 0.5, 0.1, 1e-3, 5e6], dtype=np.float32)


@dataclass
class Probe:
    exe: Path
    values: np.ndarray
    fields: dict[str, int]


def build_probe(folder: Path, *, shuffle: int, leaves: int, leaf_size: int, steps: int) -> Probe:
    rows, holdout = 37, 7
    rng = np.random.default_rng(3)
    values = rng.choice(MAGNITUDES, size=rows)
    x = np.stack([np.arange(rows, dtype=np.float32), values], axis=1)
    data = folder / "probe.csv"
    data.write_bytes(csv_bytes(x, np.zeros(rows, dtype=int)))
    fields = {
        "rows": rows,
        "holdout": holdout,
        "batch": leaves * leaf_size,
        "leaves": leaves,
        "shuffle": shuffle,
        "shuffle_seed": 0xDEADBEEF12345,
    }
    source = program_c(
        FEATURES=2,
        OUTPUTS=1,
        N_PARAMS=2,
        N_STATE=0,
        BATCH=leaves * leaf_size,
        LEAVES=leaves,
        LEAF_SIZE=leaf_size,
        STEPS=steps,
        SHUFFLE=shuffle,
        SHUFFLE_SEED=fields["shuffle_seed"],
        DATA_PATH=data,
        DATA_SHA256=hashlib.sha256(data.read_bytes()).hexdigest(),
        ROWS=rows,
        HOLDOUT=holdout,
    )
    exe = link_executable(TARGET, kernels("probe_kernels.c", folder), source, folder / "probe")
    return Probe(exe, values, fields)


@pytest.mark.parametrize("shuffle", [0, 1])
def test_batch_rows_match_the_reference(tmp_path: Path, shuffle: int) -> None:
    probe = build_probe(tmp_path, shuffle=shuffle, leaves=3, leaf_size=4, steps=9)  # 3.6 epochs
    result = run(probe.exe, "--quiet", "--params-out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    seen = [[int(r) for r in line.split()[1:]] for line in result.stderr.splitlines()]
    expected = [example_rows(**probe.fields, t=t, leaf=leaf) for t in range(9) for leaf in range(3)]
    assert seen == expected


def test_combine_follows_the_canonical_tree(tmp_path: Path) -> None:
    leaves, leaf_size, steps = 7, 2, 6
    probe = build_probe(tmp_path, shuffle=1, leaves=leaves, leaf_size=leaf_size, steps=steps)
    out = tmp_path / "probe.params"
    result = run(probe.exe, "--params-out", str(out))
    assert result.returncode == 0, result.stderr

    params = np.zeros(2, dtype=np.float32)
    batch = np.float32(leaves * leaf_size)
    order_mattered = False
    for t, event in enumerate(result.events[1:-1]):
        leaf_grads = []
        for leaf in range(leaves):
            total = np.float32(0)
            for row in example_rows(**probe.fields, t=t, leaf=leaf):
                total = total + probe.values[row]
            leaf_grads.append(np.array([total, leaf_size], dtype=np.float32))
        combined = tree_combine(leaf_grads, lambda a, b: a + b)
        loss = combined[0] / batch
        assert event["loss_bits"] == f"{loss.view(np.uint32):08x}", f"round {t}"
        left_fold = np.float32(0)
        for g in leaf_grads:
            left_fold = left_fold + g[0]
        order_mattered |= left_fold != combined[0]
        params = params + combined
    assert order_mattered, "the data should make a left fold differ from the tree"
    assert out.read_bytes() == params.astype("<f4").tobytes()


# ---- another instruction set ------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("qemu-aarch64") is None, reason="qemu-aarch64 not installed")
def test_aarch64_build_trains_the_same_bits(linear: Linear, tmp_path: Path) -> None:
    source = program_c(
        **LINEAR, BATCH=12, LEAVES=3, LEAF_SIZE=4, STEPS=linear.steps, SHUFFLE=1, SHUFFLE_SEED=5,
        DATA_PATH=linear.data, DATA_SHA256=linear.digest, ROWS=linear.rows, HOLDOUT=linear.holdout,
    )  # fmt: skip
    target = "aarch64-linux-musl"
    exe = link_executable(
        target, kernels("linear_kernels.c", tmp_path, target), source, tmp_path / "a64"
    )
    image = exe.read_bytes()
    assert struct.unpack_from("<H", image, 0x12)[0] == 183  # EM_AARCH64
    assert PT_INTERP not in elf_program_header_types(image)
    native = run(linear.exe, "--params-out", str(tmp_path / "x86.params"))
    done = subprocess.run(
        ["qemu-aarch64", str(exe), "--params-out", str(tmp_path / "a64.params")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    emulated = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "x86.params").read_bytes() == (tmp_path / "a64.params").read_bytes()
    assert [e.get("loss_bits") for e in native.events] == [e.get("loss_bits") for e in emulated]
