"""A data file's size limit is named with the file's size, and checking a large table holds
its bytes once (issue 22, item 7). The real CLI and the checker in a subprocess of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLES, cli

from alpha_core.support.files import DATA_LIMIT

SOURCE = (EXAMPLES / "digits.alpha").read_text()


def _system(tmp_path: Path, data: Path) -> Path:
    source = tmp_path / "big.alpha"
    source.write_text(SOURCE.replace('"data/digits.csv"', f'"{data}"'))
    assert str(data) in source.read_text()
    return source


def test_a_file_over_the_limit_is_refused_with_its_size(tmp_path: Path) -> None:
    data = tmp_path / "huge.csv"
    with open(data, "wb") as f:  # sparse: no disk is used, and it is never read
        f.truncate(DATA_LIMIT + 1)
    proc = cli("check", str(_system(tmp_path, data)))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    said = proc.stdout + proc.stderr
    assert "error[data-unreadable]" in said
    assert f"it is {DATA_LIMIT + 1:,} bytes, over the limit of {DATA_LIMIT:,} bytes (1 GiB)" in said


def test_other_reasons_are_named(tmp_path: Path) -> None:
    proc = cli("check", str(_system(tmp_path, tmp_path / "missing.csv")))
    assert "no such file or directory" in proc.stdout + proc.stderr
    proc = cli("check", str(_system(tmp_path, tmp_path)))
    assert "it is a directory, not a regular file" in proc.stdout + proc.stderr


# VmHWM, the peak of this process's own memory since its exec (ru_maxrss would carry over the
# larger peak of the pytest process it was forked from)
PEAK = """
import re, sys
from alpha_cli.main import main
code = main(["check", sys.argv[1]])
status = open("/proc/self/status").read()
print(code, int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) * 1024)
"""


def _checked_peak(source: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-c", PEAK, str(source)], capture_output=True, text=True, timeout=300
    )
    code, peak = done.stdout.split()[-2:]
    assert code == "0", done.stdout + done.stderr
    return int(peak)


def test_checking_a_large_table_holds_its_bytes_once(tmp_path: Path) -> None:
    """A 64 MB table adds about its own size to the checker's peak memory: the bytes read in
    one piece (not in pieces and again joined) and its lines taken one at a time (not a list
    of them). Before, the peak grew by 2.7 times the file."""
    rows = (EXAMPLES / "data" / "digits.csv").read_bytes()
    data = tmp_path / "big.csv"
    data.write_bytes(rows * ((64 << 20) // len(rows) + 1))
    small = tmp_path / "small"
    small.mkdir()
    (small / "digits.csv").write_bytes(rows)
    base = _checked_peak(_system(small, small / "digits.csv"))
    peak = _checked_peak(_system(tmp_path, data))
    size = data.stat().st_size
    assert peak - base < 1.5 * size, (peak - base) / size
