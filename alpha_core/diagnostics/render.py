"""Plain-text rendering of diagnostics, rustc style: the name, the message, the source excerpt.

The CLI colours this text; golden tests compare it as it is.
"""

from __future__ import annotations

from alpha_core.diagnostics.diagnostic import Diagnostic, visible
from alpha_core.support.span import LineIndex, Span


def _excerpt(index: LineIndex, span: Span, label: str, width: int) -> list[str]:
    start = index.position(span.start)
    end = index.position(max(span.start, span.end - 1))
    # a CRLF file's lines end in "\r", which must not reach the excerpt; a tab counts one column
    raw = index.line_text(start.line).removesuffix("\r").expandtabs(1)
    underline_end = end.column + 1 if end.line == start.line else len(raw)
    # control characters are drawn visibly (an ESC in the file must not reach the terminal);
    # the carets stand under the drawn text, which may be wider than the raw characters
    line = visible(raw)
    column = len(visible(raw[: start.column]))
    carets = "^" * max(1, len(visible(raw[:underline_end])) - column)
    number = str(start.line + 1).rjust(width)
    pad = " " * width
    return [
        f"{number} | {line}",
        f"{pad} | {' ' * column}{carets}{(' ' + label) if label else ''}",
    ]


def _one_line(index: LineIndex, span: Span) -> int | None:
    """The line `span` lies on, or None when it runs over several."""
    start = index.position(span.start).line
    return start if index.position(max(span.start, span.end - 1)).line == start else None


def render(d: Diagnostic, text: str, path: str) -> str:
    index = LineIndex(text)
    path = visible(path)
    lines = [f"{d.severity}[{d.name}]: {visible(d.message)}"]
    spans = [s for s in [d.span, *(r.span for r in d.related)] if s is not None]
    width = max((len(str(index.position(s.start).line + 1)) for s in spans), default=1)
    pad = " " * width
    shown: int | None = None  # the line the last excerpt drew, when it drew only one
    if d.span is not None:
        pos = index.position(d.span.start)
        lines.append(f"{pad}--> {path}:{pos.line + 1}:{pos.column + 1}")
        lines.append(f"{pad} |")
        lines += _excerpt(index, d.span, "", width)
        shown = _one_line(index, d.span)
    for r in d.related:
        pos = index.position(r.span.start)
        if shown is not None and _one_line(index, r.span) == shown:
            # another label on the line just drawn: its underline only, not the line again
            lines.append(_excerpt(index, r.span, r.message, width)[1])
            continue
        lines.append(f"{pad} ::: {path}:{pos.line + 1}:{pos.column + 1}")
        lines += _excerpt(index, r.span, r.message, width)
        shown = _one_line(index, r.span)
    for note in d.notes:
        lines.append(f"{pad} = note: {note}")
    if d.help:
        lines.append(f"{pad} = help: {d.help}")
    lines.append(f"{pad} = explain: alpha explain {d.name}")
    return "\n".join(lines)


def span_json(span: Span | None, text: str) -> dict[str, int] | None:
    """A span for machine-readable output: offsets and 1-based line and column."""
    if span is None:
        return None
    index = LineIndex(text)
    a, b = index.position(span.start), index.position(span.end)
    return {
        "start": span.start,
        "end": span.end,
        "line": a.line + 1,
        "column": a.column + 1,
        "end_line": b.line + 1,
        "end_column": b.column + 1,
    }
