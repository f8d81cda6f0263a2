"""`alpha explain [NAME]`: one refusal explained as rustc's --explain does (what, why, an
example, the refusal it gives as `alpha check` prints it, and a fixed version), or with no
name every refusal, grouped by the moment it can happen."""

from __future__ import annotations

import argparse

from rich.markup import escape

from alpha_cli.render import out
from alpha_core.diagnostics.fixes import ADVICE, fixed_example
from alpha_core.diagnostics.registry import REGISTRY, Refusal
from alpha_core.query.refusal_docs import MOMENTS, example_output


class UnknownRefusal(Exception):
    """A name that is not registered; the message has the nearest names."""


def listing() -> str:
    """Every registered refusal, by moment, one line each: its name and summary."""
    width = max(len(n) for n in REGISTRY)
    lines: list[str] = []
    for moment, said in MOMENTS:
        names = sorted(n for n, r in REGISTRY.items() if r.moment == moment)
        if not names:
            continue
        lines += ["", f"{moment} ({len(names)}): {said}"]
        lines += [f"  {n:<{width}}  {REGISTRY[n].summary}" for n in names]
    lines += ["", "`alpha explain NAME` for one of them"]
    return "\n".join(lines[1:])


def explanation(r: Refusal) -> str:
    """The text `alpha explain NAME` prints (without colour)."""
    parts = [f"{r.name} ({r.moment}): {r.summary}", r.explanation]
    if r.example is not None:
        parts += ["Example that is refused:", r.example.rstrip()]
        parts += ["`alpha check` says:", example_output(r)]
        fixed = fixed_example(r)
        if fixed is not None:
            parts += ["Fixed, it checks clean:", fixed.rstrip()]
    advice = ADVICE.get(r.name)
    if advice is not None:
        message, what = advice
        parts += ["What it looks like:", message, "What to do:", what]
    return "\n\n".join(parts)


def cmd_explain(args: argparse.Namespace) -> int:
    if args.name is None:
        out.print(escape(listing()))
        return 0
    r = REGISTRY.get(args.name)
    if r is None:
        from alpha_core.check.context import suggest

        near = suggest(args.name, REGISTRY)
        raise UnknownRefusal(
            f"no refusal named `{args.name}`"
            + (f"; did you mean `{near[0]}`?" if near else "; `alpha explain` lists them all")
        )
    head, _, rest = explanation(r).partition("\n\n")
    out.print(f"[bold]{escape(head)}[/]\n")
    out.print(escape(rest))
    return 0
