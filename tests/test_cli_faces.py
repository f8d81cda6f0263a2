"""The CLI and the Slurm files as a daily user meets them (issue 23): a misspelt option or
keyword gets the nearest names, a build never mixes into another build's folder, eval says
what it needs, the progress bar prints a small loss as the report does, and `--emit` reads
Slurm's host-list syntax without a controller and starts roles natively on nodes of unknown
instruction set. The real CLI in a subprocess."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import EXAMPLES, cli
from test_partitioned import SHORT

DIGITS = str(EXAMPLES / "digits.alpha")


def test_a_misspelt_option_gets_the_commands_usage_and_the_nearest_options() -> None:
    proc = cli("run", DIGITS, "--plans", "star")
    assert proc.returncode == 2
    assert "usage: alpha run " in proc.stderr  # the command's usage, not alpha's
    assert "alpha run: error: unrecognized arguments: --plans star; did you mean --plan" in (
        proc.stderr
    )
    proc = cli("deploy", "slurm", DIGITS, "--plan", "star", "--nodelists", "n1")
    assert "alpha deploy slurm: error: unrecognized arguments: --nodelists n1; did you mean " in (
        proc.stderr
    )


def test_a_misspelt_keyword_gets_the_nearest_keyword(tmp_path: Path) -> None:
    source = tmp_path / "digits.alpha"
    source.write_text(SHORT.replace("  learner ", "  lerner "))
    proc = cli("check", str(source))
    assert proc.returncode == 1
    assert "found `lerner`" in proc.stderr and "help: did you mean `learner`?" in proc.stderr


def test_a_build_never_mixes_into_another_builds_folder(tmp_path: Path) -> None:
    source = tmp_path / "digits.alpha"
    source.write_text(SHORT)
    out = tmp_path / "out"
    assert cli("build", str(source), "--plan", "pair", "-o", str(out)).returncode == 0
    proc = cli("build", str(source), "--plan", "star", "-o", str(out))
    assert proc.returncode == 1
    assert "error[output-holds-another-build]" in proc.stderr
    assert "system `digits`, plan `pair`" in proc.stderr and "plan `star`" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["alpha-build.json", "worker-0", "worker-1"]
    # the same plan again replaces its own build
    assert cli("build", str(source), "--plan", "pair", "-o", str(out)).returncode == 0


def test_eval_of_a_parameter_file_says_what_eval_reads(tmp_path: Path) -> None:
    params = tmp_path / "digits.params"
    params.write_bytes(b"\0" * 16)
    proc = cli("eval", DIGITS, "--checkpoint", str(params))
    assert proc.returncode == 1
    assert f"--checkpoint {params} is a parameter file; eval reads a checkpoint folder" in (
        proc.stderr
    )
    assert "Not a directory" not in proc.stderr


def test_the_progress_bar_prints_the_loss_as_the_report_does(tmp_path: Path) -> None:
    source = tmp_path / "digits.alpha"
    source.write_text(SHORT)
    proc = cli("run", str(source), "-o", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr
    final = re.search(r"final loss\s+(\S+)", proc.stdout)
    assert final is not None
    bar = re.findall(r"loss (\S+)", proc.stderr)
    assert bar and bar[-1] == final.group(1)  # six decimals or scientific, never 0.0000


def test_emit_expands_slurm_host_lists_and_runs_natively_on_unknown_nodes(
    tmp_path: Path,
) -> None:
    """No controller answers here (the Slurm test cluster is not running): the host list is
    expanded by alpha as `scontrol show hostnames` would, and a node whose instruction set
    nobody reported runs its x86-64 roles natively."""
    source = tmp_path / "digits.alpha"
    source.write_text(SHORT)
    into = tmp_path / "emit"
    proc = cli(
        "deploy", "slurm", str(source), "--plan", "star", "--emit", str(into),
        "--nodelist", "node[1-3],gpu[07-08]", "--node-dir", "/tmp",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    hosts = [line.split() for line in (into / "hosts").read_text().splitlines()]
    nodes = {h[1].rsplit(":", 1)[0] for h in hosts if h and not h[0].startswith("#")}
    assert nodes == {"node1", "node2", "node3", "gpu07", "gpu08"}  # 5 roles, 5 nodes
    conf = (into / "roles-0.conf").read_text()
    assert "qemu-" not in conf
    proc = cli(
        "deploy", "slurm", str(source), "--plan", "star", "--emit", str(tmp_path / "bad"),
        "--nodelist", "node[3-1]",
    )  # fmt: skip
    assert proc.returncode == 1 and "error[slurm-failed]" in proc.stderr
    assert "is not a number or a range" in proc.stderr and "Traceback" not in proc.stderr
