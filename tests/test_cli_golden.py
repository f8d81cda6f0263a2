"""The CLI as a new user meets it (issue 14, items 9-13): refusals of the command line by name
with a did-you-mean, `alpha project` without repeated steps and with ops as objects, the
diagnostics' messages and spans, `alpha explain` (the list, each refusal as `alpha check`
prints it and a fixed version that checks clean), help, `--version` and readable sizes.

Each golden text is what the real command prints (in-process `main`, or a subprocess where
the command's own process matters); the checker and the runtime are the real ones."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT, cli

from alpha_cli.explain_cmd import explanation, listing
from alpha_cli.main import main as alpha
from alpha_core.diagnostics.fixes import ADVICE, FIXES, fixed_example
from alpha_core.diagnostics.registry import COMPILE, REGISTRY, _tiny
from alpha_core.query.refusal_docs import MOMENTS, example_output
from alpha_core.run.launch import Launch
from alpha_core.workspace.analysis import Workspace

DIGITS = str(EXAMPLES / "digits.alpha")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = alpha(list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


# ---- item 9: the command line refused by name, with what was meant -----------------------------


def test_a_pairing_without_a_plan_is_refused_not_ignored(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "run", DIGITS, "--pairing", "local")
    assert (code, out) == (2, "")
    assert err == (
        "error[usage]: --pairing local pairs the roles of a plan: give --plan too; "
        "`local` pairs plan `pair`\n"
    )


def test_a_mistyped_plan_or_system_gets_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "run", DIGITS, "--plan", "stra")
    assert code == 1
    assert err.startswith(
        "error[no-system]: no plan named `stra` (plans: `pair`, `star`, `tree`, `uneven`)\n"
        "  = help: did you mean `star`?\n"
    )
    code, _, err = run(capsys, "build", DIGITS, "--system", "digts", "-o", "unused")
    assert code == 1
    assert err.startswith(
        "error[no-system]: no system named `digts` (the file declares `digits`)\n"
        "  = help: did you mean `digits`?\n"
    )


@pytest.mark.parametrize(
    ("role", "near"),
    [("worker3", "worker[3]"), ("workr[2]", "worker[2]"), ("hubb", "hub"), ("worker[9]", None)],
)
def test_a_mistyped_role_lists_the_roles(
    capsys: pytest.CaptureFixture[str], role: str, near: str | None
) -> None:
    code, _, err = run(capsys, "project", DIGITS, "--plan", "star", "--role", role)
    expected = (
        f"error[usage]: plan `star` has no role `{role}` "
        "(its roles: `hub`, `worker[0]` … `worker[3]`)"
    )
    if near is not None:
        expected += f"; did you mean `{near}`?"
    assert (code, err) == (2, expected + "\n")


# ---- item 10: alpha project --------------------------------------------------------------------


@pytest.mark.parametrize("plan", ["pair", "star", "tree", "uneven"])
def test_project_shows_each_step_once_and_json_ops_are_objects(
    capsys: pytest.CaptureFixture[str], plan: str
) -> None:
    code, out, _ = run(capsys, "project", DIGITS, "--plan", plan, "--json")
    assert code == 0
    for role in json.loads(out)["roles"]:
        ops = role["ops"]
        assert all(isinstance(op, dict) for op in ops)
        texts = [op["text"] for op in ops]
        # the old projection combined a leaf worker's node twice: `2. combine node [0, 2)`
        # then `3. combine node [0, 2)`
        assert len(texts) == len(set(texts)), (role["role"], texts)
        for op in ops:
            assert set(op) == {"kind", "node", "peer", "elements", "text"}
            if op["kind"] in ("send", "recv"):
                assert op["peer"] and op["node"][0] < op["node"][1]


def test_project_of_a_star_leaf_worker(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "project", DIGITS, "--plan", "star", "--role", "worker[1]")
    assert code == 0
    assert out == (
        "role worker[1] (index 2 of 5), plan star\n"
        "  link: connects to hub\n"
        "  each round:\n"
        "    1. compute leaves [2, 4)\n"
        "    2. combine node [2, 4) by the canonical tree\n"
        "    3. send piece [2, 4) to hub\n"
        "    4. receive piece [0, 8) from hub\n"
        "    5. apply the learner to the round's gradient\n"
    )


# ---- item 11: diagnostics ----------------------------------------------------------------------

TINY = _tiny().replace("x @ w + bias", "x @ w + b")


def check(capsys: pytest.CaptureFixture[str], tmp_path: Path, source: str) -> str:
    path = tmp_path / "t.alpha"
    path.write_text(source)
    os.chdir(tmp_path)  # paths print as given: t.alpha
    code, out, err = run(capsys, "check", "t.alpha")
    assert code == 1 and out == ""
    return err


@pytest.fixture(autouse=True)
def _back_home() -> object:
    here = os.getcwd()
    yield
    os.chdir(here)


def test_a_short_name_one_edit_away_is_suggested(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = TINY.replace("param w:", "param w2:").replace("x @ w +", "x @ w3 +")
    assert check(capsys, tmp_path, source) == (
        "error[unknown-name]: unknown name `w3`\n"
        " --> t.alpha:7:16\n"
        "  |\n"
        "7 |     return x @ w3 + b\n"
        "  |                ^^\n"
        "  = help: did you mean `w2`?\n"
        "  = explain: alpha explain unknown-name\n"
        "\n"
        "refused: 1 refusal in t.alpha\n"
    )


def test_a_missing_paren_points_at_the_unclosed_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = TINY.replace("return x @ w + b", "return (x @ w + b")
    assert check(capsys, tmp_path, source) == (
        "error[syntax-error]: unclosed `(`: expected `)`, found `}`\n"
        " --> t.alpha:7:12\n"
        "  |\n"
        "7 |     return (x @ w + b\n"
        "  |            ^\n"
        "  ::: t.alpha:8:3\n"
        "8 |   }\n"
        "  |   ^ `)` expected before this\n"
        "  = explain: alpha explain syntax-error\n"
        "\n"
        "refused: 1 refusal in t.alpha\n"
    )


@pytest.mark.parametrize("item", ["device gpu", "device: gpu", "gpu h100"])
def test_a_device_in_a_system_is_one_device_in_semantics_refusal(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, item: str
) -> None:
    word = item.split()[0].rstrip(":")
    source = TINY.replace("  steps 10\n", f"  steps 10\n  {item}\n")
    caret = "^" * len(word)
    assert check(capsys, tmp_path, source) == (
        f"error[device-in-semantics]: `{word}` says where the system runs; a system says only "
        "what is learned\n"
        "  --> t.alpha:12:3\n"
        "   |\n"
        f"12 |   {item}\n"
        f"   |   {caret}\n"
        "   = help: say it in a pairing of a plan for this system, e.g. "
        "`pairing p for PLAN { worker[*]: host x86_64 }`\n"
        "   = explain: alpha explain device-in-semantics\n"
        "\n"
        "refused: 1 refusal in t.alpha\n"
    )


def test_a_wrong_class_count_points_at_the_data(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = TINY.replace("classes: 3", "classes: 10")
    assert check(capsys, tmp_path, source) == (
        "error[shape-mismatch]: the model gives f32[B, 3] but the data's labels need "
        "f32[B, 10]\n"
        " --> t.alpha:9:30\n"
        "  |\n"
        "9 |   loss softmax_cross_entropy(model(x), y)\n"
        "  |                              ^^^^^^^^\n"
        "  ::: t.alpha:2:48\n"
        "2 |   data train: synthetic(rows: 64, features: 4, classes: 10, seed: 1)\n"
        "  |                                                ^^^^^^^^^^^ the data declares "
        "classes here\n"
        "  = explain: alpha explain shape-mismatch\n"
        "\n"
        "refused: 1 refusal in t.alpha\n"
    )


def test_several_labels_on_one_line_print_the_line_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = TINY.replace("return x @ w + b", "return x @ b + b")
    err = check(capsys, tmp_path, source)
    assert err.count("7 |     return x @ b + b") == 1, err
    assert err == (
        "error[shape-mismatch]: cannot multiply f32[B, 4] by f32[3]\n"
        " --> t.alpha:7:14\n"
        "  |\n"
        "7 |     return x @ b + b\n"
        "  |              ^\n"
        "  |            ^ this is f32[B, 4]\n"
        "  |                ^ this is f32[3]\n"
        "  = help: `@` takes two matrices\n"
        "  = explain: alpha explain shape-mismatch\n"
        "\n"
        "refused: 1 refusal in t.alpha\n"
    )


def test_an_h200_not_a_h200() -> None:
    from alpha_core.syntax.words import article

    assert [article(w) for w in ("h200", "a100", "rtx3070", "gpu", "x86_64", "unit")] == [
        "an",
        "an",
        "an",
        "a",
        "an",
        "a",
    ]
    source = REGISTRY["unsupported-on-target"].example
    assert source is not None and "gpu h200" in source
    messages = [d.message for d in Workspace().analyze("t.alpha", source).diagnostics]
    assert not any("a h200" in m for m in messages), messages


# ---- item 12: alpha explain ---------------------------------------------------------------------


def test_explain_without_a_name_lists_every_refusal_by_moment(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "explain")
    assert code == 0 and out == listing() + "\n"
    lines = out.splitlines()
    headers = [i for i, line in enumerate(lines) if line and not line.startswith(" ")]
    assert len(headers) >= 5
    for name, r in REGISTRY.items():
        [at] = [i for i, line in enumerate(lines) if line.startswith(f"  {name} ")]
        header = lines[max(h for h in headers if h < at)]
        assert header.startswith(f"{r.moment} ("), (name, header)
    assert [m for m, _ in MOMENTS if any(r.moment == m for r in REGISTRY.values())] == [
        lines[h].split(" (")[0] for h in headers[:-1]
    ]


COMPILE_EXAMPLES = sorted(n for n, r in REGISTRY.items() if r.example is not None)


@pytest.mark.parametrize("name", COMPILE_EXAMPLES)
def test_explain_shows_the_refusal_and_a_fixed_version_that_checks_clean(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    r = REGISTRY[name]
    assert name in FIXES, f"add the fix of {name}'s example to alpha_core/diagnostics/fixes.py"
    fixed = fixed_example(r)
    assert fixed is not None, f"{name}: the example no longer holds the text its fix replaces"
    # the example is refused with this name by the real checker, and the explanation shows
    # exactly what `alpha check` prints for it
    shown = example_output(r)
    assert f"error[{name}]" in shown
    analysis = Workspace(read_file=lambda _: None).analyze("/project/tiny.alpha", fixed)
    assert analysis.diagnostics == [], [d.message for d in analysis.diagnostics]
    program, diags = analysis.program()
    assert program is not None and diags == []
    code, out, _ = run(capsys, "explain", name)
    assert code == 0
    assert out == explanation(r) + "\n"
    assert shown in out and fixed.rstrip() in out


@pytest.mark.parametrize("name", sorted(ADVICE))
def test_runtime_refusals_show_a_message_and_advice(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    assert REGISTRY[name].moment != COMPILE
    message, advice = ADVICE[name]
    assert message.startswith(f"error[{name}]: ") and advice
    code, out, _ = run(capsys, "explain", name)
    assert code == 0 and message in out and advice in out


def test_peer_lost_and_role_crashed_have_advice() -> None:
    assert {"peer-lost", "role-crashed"} <= set(ADVICE)


# ---- item 13: help, --version, sizes, resume, signals -------------------------------------------


@pytest.mark.parametrize("module", ["alpha_cli.main", "alpha_lsp.server", "alpha_tui.cli"])
def test_every_face_has_a_version(module: str) -> None:
    prog = {"alpha_cli.main": "alpha", "alpha_lsp.server": "alpha-lsp"}.get(module, "alpha-tui")
    code = f"import sys; from {module} import main; sys.argv[0] = '{prog}'; main(['--version'])"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{prog} 0.1.0 (Python ")


@pytest.mark.parametrize("command", ["check", "build", "run", "project", "explain"])
def test_help_has_a_description_examples_and_every_argument_described(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    with pytest.raises(SystemExit) as done:
        alpha([command, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "\nexamples:\n  alpha " + command in text
    assert text.split("\n\n")[1].strip(), "no description"
    undocumented = [
        a.option_strings or [a.dest]
        for a in _subparser(command)._actions
        if not a.help and a.dest != "help"
    ]
    assert undocumented == [], undocumented


def _subparser(command: str) -> argparse.ArgumentParser:
    from alpha_cli.main import parser

    for action in parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[command]
    raise AssertionError("no subcommands")


def test_sizes_are_printed_as_the_lsp_prints_them(tmp_path: Path) -> None:
    from alpha_core.support.sizes import human_bytes, show_loss

    assert human_bytes(8_588_215_204) == "8.00 GiB" and human_bytes(1536) == "1.50 KiB"
    assert show_loss(3e-9) == "3.0000e-09" and show_loss(0.040045) == "0.040045"
    done = cli("build", DIGITS, "-o", str(tmp_path / "b"))
    assert done.returncode == 0, done.stderr
    line = done.stdout.splitlines()[0]
    assert " KiB  sha256 " in line and "GiB" in line.split("headroom")[1], line
    assert "bytes" not in line


def test_a_killed_role_names_its_signal() -> None:
    kill_self = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    [outcome] = Launch([("worker[1]", [sys.executable, "-c", kill_self])]).wait()
    assert outcome.refusal == "role-crashed"
    assert outcome.message == "worker[1] was killed by signal 15 (SIGTERM) and no named refusal"


def test_a_run_keeps_its_parameters_and_a_resume_says_its_round(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("ALPHA_RUNS_DIR", None)
    ckpt = tmp_path / "ckpt"
    first = subprocess.run(
        [sys.executable, "-m", "alpha_cli.main", "run", DIGITS, "--json"]
        + ["--checkpoint-dir", str(ckpt), "--checkpoint-every", "100"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert first.returncode == 0, first.stderr
    [role] = json.loads(first.stdout)["roles"]
    params = Path(role["params_file"])
    # the old run removed its temporary folder: params_file named a file that was gone
    assert params.is_file() and params.stat().st_size >= 2410 * 4
    [folder] = (tmp_path / "alpha-runs").iterdir()
    assert folder.name.startswith("digits-") and params.parent.resolve() == folder.resolve()
    again = subprocess.run(
        [sys.executable, "-m", "alpha_cli.main", "run", DIGITS]
        + ["--resume", str(ckpt / "round-00000100"), "-o", "resumed"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert again.returncode == 0, again.stderr
    assert "resuming at round 100 of 300" in again.stderr, again.stderr
    assert "training 300 steps" not in again.stderr
    # in -o the parameters lie beside the executable, and the report says where
    assert "parameters file   resumed/digits.params\n" in again.stdout, again.stdout
    assert (tmp_path / "resumed" / "digits.params").is_file()


def test_checkpoint_every_applies_to_a_plan_too(tmp_path: Path) -> None:
    """It used to apply only without a plan, silently: a plan without a `checkpoint` item
    captured nothing."""
    ckpt = tmp_path / "ckpt"
    done = cli(
        "run", DIGITS, "--plan", "pair", "--checkpoint-every", "100", "--checkpoint-dir", str(ckpt)
    )
    assert done.returncode == 0, done.stderr
    assert "parameters sha256 5e1513e5f1af481bd39ea8996636710dc3a22d6b" in done.stdout
    assert sorted(p.name for p in ckpt.iterdir()) == [f"round-{r:08d}" for r in (100, 200, 300)]
