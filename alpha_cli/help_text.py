"""What `alpha --help` and `alpha COMMAND --help` say: a description and examples for each
command, and a line for every argument that has none. Kept apart from the parser in main.py so
that the words can be read (and changed) in one place."""

from __future__ import annotations

import argparse
import textwrap

from alpha_core.support.version import version_line

DESCRIPTIONS = {
    "check": "Parse and check a file: every refusal with its span, or what it declares.",
    "build": "Compile a system (or every role of a plan) into static native executables, "
    "each admitted against its memory.",
    "run": "Build, start every role on this machine, show their progress, and report the final "
    "loss, held-out metric and parameters' SHA-256. The executables and the parameters are "
    "kept: in -o, or in a new folder ./alpha-runs/<system>[-<plan>]-<time>/ "
    "(ALPHA_RUNS_DIR chooses another place).",
    "project": "Show what each role of a plan does every round: its links and its ops.",
    "inspect": "Verify a checkpoint (every digest) and describe it.",
    "eval": "Evaluate a checkpoint on the held-out rows with the system's own compiled model.",
    "explain": "Explain a refusal: when it happens, why, an example, the refusal it gives and a "
    "fixed version. Without a name: every refusal, by the moment it can happen.",
    "runs": "List the runs kept in ./alpha-runs (ALPHA_RUNS_DIR, or --dir), newest first; "
    "`alpha runs compare A B`: two runs' configurations, results, digests and loss curves.",
}

EXAMPLES = {
    "check": ["alpha check examples/digits.alpha", "alpha check examples/digits.alpha --json"],
    "build": [
        "alpha build examples/digits.alpha -o build",
        "alpha build examples/digits.alpha --plan pair --pairing local -o build",
        "alpha build examples/digits.alpha --plan tree --role 'worker[3]' -o build",
    ],
    "run": [
        "alpha run examples/digits.alpha",
        "alpha run examples/digits.alpha --plan star -o run1",
        "alpha run examples/digits.alpha --checkpoint-dir ckpt --checkpoint-every 50",
        "alpha run examples/digits.alpha --resume ckpt",
    ],
    "project": [
        "alpha project examples/digits.alpha --plan tree",
        "alpha project examples/digits.alpha --plan star --role hub --json",
    ],
    "inspect": ["alpha inspect ckpt", "alpha inspect ckpt/round-00000300 --json"],
    "eval": ["alpha eval examples/digits.alpha --checkpoint ckpt"],
    "explain": ["alpha explain", "alpha explain shape-mismatch"],
    "runs": ["alpha runs", "alpha runs compare 2 1", "alpha runs compare RUN_A RUN_B --log"],
    "predict": [
        "alpha predict examples/digits.alpha --params run/digits.params --input rows.csv",
        "alpha predict examples/digits.alpha --checkpoint ckpt --input x.npy -o out.npy",
    ],
    "export": [
        "alpha export run/digits.params --format safetensors",
        "alpha export ckpt --format npz --source examples/digits.alpha -o digits.npz",
    ],
}

# arguments that mean the same in every command that takes them
COMMON_HELP = {
    "file": "the .alpha source file",
    "json": "print one JSON object on standard output instead of text",
    "output": "the folder the executables (and, for run, the parameters) are written to",
    "checkpoint": "a checkpoint folder (its newest published capture) or one capture folder",
    "system": "the system to use when the file declares several",
    "data": "the data file, instead of the path the system names",
    "name": "a refusal's name, as printed in error[NAME]; leave it out to list them all",
    "plan": "the plan whose roles to show",
    "role": "only this role, e.g. hub or worker[3]",
    "target": "the instruction set to build for (aarch64 runs here under qemu-aarch64)",
}


def _epilog(command: str) -> str:
    lines = ["examples:", *(f"  {e}" for e in EXAMPLES.get(command, []))]
    return "\n".join(lines)


def decorate(parser: argparse.ArgumentParser) -> None:
    """Descriptions, examples and argument help for `alpha` and each of its commands, and
    `--version`."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "examples:\n  alpha check examples/digits.alpha\n  alpha run examples/digits.alpha "
        "--plan pair\n  alpha explain\n\n`alpha COMMAND --help` for each command's arguments"
    )
    parser.add_argument("--version", action="version", version=version_line("alpha"))
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            if name in DESCRIPTIONS:  # the raw formatter keeps the examples' lines: wrap here
                sub.description = textwrap.fill(DESCRIPTIONS[name], 88)
            if name in EXAMPLES:
                sub.epilog = _epilog(name)
            sub.formatter_class = argparse.RawDescriptionHelpFormatter
            for arg in sub._actions:
                if arg.help is None and arg.dest in COMMON_HELP:
                    arg.help = COMMON_HELP[arg.dest]
