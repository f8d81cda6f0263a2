"""docs/refusals.md, generated from the registry: every refusal by moment, with its story and,
for the compile-time ones, the example and the exact text the renderer prints for it.

`python -m alpha_core.query.refusal_docs` writes the file; `--check` fails when it is stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from alpha_core.diagnostics.diagnostic import Diagnostic
from alpha_core.diagnostics.registry import (
    COMPILE,
    FIRST_MESSAGE,
    REGISTRY,
    RESUME,
    START_UP,
    USAGE,
    Refusal,
)
from alpha_core.diagnostics.render import render

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "refusals.md"

# The examples are analysed as if they lived here, with no file readable, so that the text
# (the data-unreadable message names the path it looked for) is the same on every machine.
EXAMPLE_DIR = "/project"
EXAMPLE_FILE = "tiny.alpha"

MOMENTS: tuple[tuple[str, str], ...] = (
    (
        COMPILE,
        "Given by `alpha check`, `alpha build`, `alpha run` and the editor, before "
        "anything is built.",
    ),
    (
        START_UP,
        "Given by a built executable, or by the launcher that started it, before "
        "training starts. Nothing is written.",
    ),
    (FIRST_MESSAGE, "Given when a role receives its first message from another role."),
    (RESUME, "Given when a run is resumed from saved state."),
    (USAGE, "Given when a command is called with arguments it does not take."),
)


def _no_file(path: str) -> bytes | None:
    return None


def example_diagnostics(refusal: Refusal) -> list[Diagnostic]:
    """What analysing the refusal's example reports: the file's refusals, or, when the file has
    none, the refusals of choosing a system to build (`no-system`)."""
    from alpha_core.workspace.analysis import (
        Workspace,  # the workspace itself depends on diagnostics
    )

    assert refusal.example is not None
    analysis = Workspace(read_file=_no_file).analyze(
        f"{EXAMPLE_DIR}/{EXAMPLE_FILE}", refusal.example
    )
    diags = analysis.diagnostics
    if not diags:
        diags = analysis.program()[1]
    return diags


def example_output(refusal: Refusal) -> str:
    """The refusals of the example, rendered as `alpha check` prints them (without colour)."""
    assert refusal.example is not None
    return "\n\n".join(
        render(d, refusal.example, EXAMPLE_FILE) for d in example_diagnostics(refusal)
    )


def _fence(body: str, lang: str) -> list[str]:
    fence = "```"
    while fence in body:
        fence += "`"
    return [fence + lang, body.rstrip("\n"), fence]


def _entry(r: Refusal) -> list[str]:
    lines = [
        f"### `{r.name}`",
        "",
        f"*{r.summary[:1].upper()}{r.summary[1:]}.*",
        "",
        r.explanation,
        "",
    ]
    if r.example is not None:
        lines += [
            "An example that is refused:",
            "",
            *_fence(r.example, "alphadsl"),
            "",
            "What the compiler prints for it:",
            "",
            *_fence(example_output(r), "text"),
            "",
        ]
    return lines


def refusals_markdown() -> str:
    by_moment: dict[str, list[Refusal]] = {m: [] for m, _ in MOMENTS}
    for r in REGISTRY.values():
        by_moment.setdefault(r.moment, []).append(r)
    lines = [
        "# Refusals",
        "",
        "<!-- Generated from alpha_core/diagnostics/registry.py by "
        "`python -m alpha_core.query.refusal_docs`; do not edit by hand. -->",
        "",
        "Every refusal Alpha gives has a stable name. The compiler, the executables, the editor "
        "and `alpha explain NAME` all read the same registry; this page is generated from it. "
        "Each compile-time example below is analysed when the page is generated, and the text "
        "after it is what the compiler really prints for it.",
        "",
    ]
    for moment, _ in MOMENTS:
        names = ", ".join(f"[`{r.name}`](#{r.name})" for r in by_moment[moment])
        lines.append(f"- {moment[:1].upper()}{moment[1:]}: {names or 'none yet'}")
    lines.append("")
    for moment, intro in MOMENTS:
        lines += [f"## {moment[:1].upper()}{moment[1:]}", "", intro, ""]
        if not by_moment[moment]:
            lines += ["No refusal is given at this moment yet.", ""]
        for r in by_moment[moment]:
            lines += _entry(r)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m alpha_core.query.refusal_docs",
        description="Write docs/refusals.md from the refusal registry.",
    )
    p.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if the file is not up to date"
    )
    p.add_argument("--path", type=Path, default=DOC_PATH)
    args = p.parse_args(argv)
    text = refusals_markdown()
    if args.check:
        current = args.path.read_text(encoding="utf-8") if args.path.is_file() else None
        if current != text:
            print(
                f"{args.path} is out of date; run `python -m alpha_core.query.refusal_docs`",
                file=sys.stderr,
            )
            return 1
        return 0
    args.path.parent.mkdir(parents=True, exist_ok=True)
    args.path.write_text(text, encoding="utf-8")
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
