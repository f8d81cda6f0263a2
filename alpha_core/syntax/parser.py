"""Parse a source text into a Module. Parsing never fails: it returns a tree and diagnostics.

The file is cut into declarations and each declaration's body into items (pieces.py); each
piece is parsed by the LALR grammar in grammars/alpha.lark with the start rule that fits it.
Parsing is memoized at two levels in one table (`_parse_piece`), both by text alone: a whole
declaration, with spans relative to its first character, and within it each item. An edit
re-parses the one declaration it touched, and in it only the items whose text changed; every
other declaration is a lookup, wherever it moved. Absolute spans are made when the module is
asked for (`ParsedFile.module`), one declaration at a time, and kept for the offsets in use.
A piece that does not parse becomes an ErrorItem.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lark

from alpha_core.diagnostics import Diagnostic, Related
from alpha_core.support.collector import collector_paused
from alpha_core.support.memo import CacheInfo, Lru, memoized
from alpha_core.support.span import Span
from alpha_core.syntax import ast
from alpha_core.syntax import quick as syntax_quick
from alpha_core.syntax.pieces import DeclPieces, cut_decls, scan_decl
from alpha_core.syntax.shift import shift
from alpha_core.syntax.shift import span as shift_span
from alpha_core.syntax.to_ast import Build, SyntaxFailure

GRAMMAR_PATH = Path(__file__).resolve().parents[2] / "grammars" / "alpha.lark"
ITEM_START = {"system": "system_item", "plan": "plan_item", "pairing": "pairing_item"}
DECLARATION = "declaration"  # the pseudo start rule of a whole declaration in `_parse_piece`


@functools.cache
def _parser() -> lark.Lark:
    return lark.Lark(
        GRAMMAR_PATH.read_text(),
        parser="lalr",
        start=["header", "system_item", "plan_item", "pairing_item", "start"],
        propagate_positions=True,
        maybe_placeholders=True,
    )


_TOKEN_WORDS = {
    "LBRACE": "`{`",
    "RBRACE": "`}`",
    "LPAR": "`(`",
    "RPAR": "`)`",
    "LSQB": "`[`",
    "RSQB": "`]`",
    "COMMA": "`,`",
    "COLON": "`:`",
    "EQUAL": "`=`",
    "PLUS": "`+`",
    "MINUS": "`-`",
    "STAR": "`*`",
    "SLASH": "`/`",
    "__ANON_0": "`->`",
    "NAME": "a name",
    "INT": "an integer",
    "NUMBER": "a number",
    "STRING": "a string",
    "$END": "end of item",
}


def _describe(expected: set[str]) -> str:
    words = sorted({_TOKEN_WORDS.get(e, f"`{e.lower()}`" if e.isupper() else e) for e in expected})
    if len(words) > 6:
        words = words[:6] + ["..."]
    return ", ".join(words)


_CLOSERS = {"(": ")", "[": "]"}
_CLOSER_TOKENS = {"(": "RPAR", "[": "RSQB"}


def _unclosed(text: str, upto: int, accepts: set[str]) -> int | None:
    """Where the innermost bracket still open before `upto` was opened, when the parser
    would accept its closer here; None otherwise. Strings and comments are skipped."""
    stack: list[int] = []
    i = 0
    while i < upto:
        c = text[i]
        if c == '"':
            end = text.find('"', i + 1)
            i = upto if end < 0 else end + 1
            continue
        if c == "#":
            end = text.find("\n", i)
            i = upto if end < 0 else end
            continue
        if c in "([":
            stack.append(i)
        elif c in ")]" and stack:
            stack.pop()
        i += 1
    if stack and _CLOSER_TOKENS[text[stack[-1]]] in accepts:
        return stack[-1]
    return None


def _placement_item(text: str, at: int) -> Diagnostic | None:
    """A system item that does not parse and opens with a placement word (`device gpu`,
    `host: x86_64`): the mistake is where it says it, not its grammar, so it is refused as
    such, once, with where placement is said instead."""
    from alpha_core.syntax.words import device_word

    word = text.split(maxsplit=1)[0].rstrip(":") if text.strip() else ""
    if not word or not device_word(word):
        return None
    return Diagnostic(
        "device-in-semantics",
        f"`{word}` says where the system runs; a system says only what is learned",
        Span(at, at + len(word)),
        help="say it in a pairing of a plan for this system, e.g. "
        "`pairing p for PLAN { worker[*]: host x86_64 }`",
    )


def _syntax_diagnostic(err: lark.exceptions.LarkError, text: str, offset: int) -> Diagnostic:
    near: str | None = None
    if isinstance(err, lark.exceptions.UnexpectedToken):
        tok = err.token
        if tok.type == "$END":
            pos = len(text)
            found = "end of item"
        else:
            pos = tok.start_pos or 0
            found = f"`{tok.value}`"
        # `accepts` are the tokens really acceptable here; `expected` holds the lookaheads of the
        # state before its pending reductions, which may name items that cannot follow
        accepts = set(err.accepts or err.expected)
        message = f"expected {_describe(accepts)}, found {found}"
        near = _near_keyword(str(tok.value), accepts) if tok.type != "$END" else None
        span = Span(offset + pos, offset + pos + max(1, len(str(tok.value))))
        if tok.type == "$END":
            span = Span(offset + max(0, pos - 1), offset + pos)
        opened = _unclosed(text, pos, accepts)
        if opened is not None:
            # the mistake is where the bracket was opened, not where the parser gave up
            # (often the next line): point there, and at where the closer was wanted
            bracket = text[opened]
            return Diagnostic(
                "syntax-error",
                f"unclosed `{bracket}`: expected `{_CLOSERS[bracket]}`, found {found}",
                Span(offset + opened, offset + opened + 1),
                (Related(span, f"`{_CLOSERS[bracket]}` expected before this"),),
            )
    elif isinstance(err, lark.exceptions.UnexpectedCharacters):
        pos = err.pos_in_stream or 0
        message = f"unexpected character `{text[pos]}`"
        span = Span(offset + pos, offset + pos + 1)
    else:
        pos = 0
        message = "this does not parse"
        span = Span(offset, offset + len(text))
    return Diagnostic("syntax-error", message, span, help=near)


def _near_keyword(word: str, accepts: set[str]) -> str | None:
    """`did you mean `learner`?` for a misspelt keyword (`lerner`) where keywords are
    expected: the accepted tokens that are words, nearest first."""
    if not word.isidentifier():
        return None
    keywords = sorted(e.lower() for e in accepts if e.isalpha() and e.isupper())
    near = difflib.get_close_matches(word.lower(), keywords, n=2, cutoff=0.6)
    return "did you mean " + " or ".join(f"`{k}`" for k in near) + "?" if near else None


@dataclass(frozen=True, eq=False)
class ParsedDecl:
    """One declaration parsed on its own: its tree and diagnostics with spans relative to its
    first character. The same text always gives the same object while it is memoized, so it
    serves as a key for what is computed from it (compared by identity)."""

    text: str
    decl: ast.Decl
    diagnostics: tuple[Diagnostic, ...]


# memo budgets, in characters of the pieces' text (a parsed piece's memory grows with its text,
# about 40 bytes a character): two versions of a 1 MB document's declarations and items, and a
# bounded heap over a long editing session. A larger file parsed once loses nothing by evicting
# its own declarations (each is parsed once anyway); its shared items stay, being recent.
PIECES = 131072
PIECE_TEXT = 4_000_000
PLACED = 16384
PLACED_TEXT = 2_000_000


_PIECES: Lru[tuple[str, str], tuple[Any, Diagnostic | None, int]] = Lru(
    "parser.pieces", PIECES, PIECE_TEXT
)
_MOVED: Lru[tuple[str, str, int], tuple[Any, Diagnostic | None]] = Lru(
    "parser.moved_pieces", PIECES, PIECE_TEXT // 4
)


def _parse_piece(text: str, start: str, at: int = 0) -> tuple[Any, Diagnostic | None]:
    """Parse one piece, its spans starting at `at`. Memoized by text: the unit of incremental
    reparsing. A piece is built where it first stood and moved on a later hit elsewhere, so the
    tree a declaration holds is the memoized one (an item was built at 0 and then copied to
    its place in its declaration, every item of a cold check twice).

    `start` is a grammar start rule, or DECLARATION for a whole declaration (a ParsedDecl at 0,
    whose items come from this same table), so clearing it forgets every parse."""
    kept = _PIECES.get((text, start))
    if kept is None:
        value, err = _build_piece(text, start, at)
        _PIECES.put((text, start), (value, err, at), len(text))
        return value, err
    value, err, origin = kept
    if origin == at:
        return value, err
    # the same text at the same place in another declaration is the same tree: the items of
    # a file of many similar systems are shared, not copied once per system
    moved = _MOVED.get((text, start, at))
    if moved is None:
        by = at - origin
        moved = (
            shift(value, by) if value is not None else None,
            shift_diagnostic(err, by) if err is not None else None,
        )
        _MOVED.put((text, start, at), moved, len(text))
    return moved


def _build_piece(text: str, start: str, at: int) -> tuple[Any, Diagnostic | None]:
    if start == DECLARATION:
        diags: list[Diagnostic] = []
        decl = _parse_decl(scan_decl(text), diags)
        return ParsedDecl(text, decl, tuple(diags)), None
    quick = (
        syntax_quick.header(text, at)
        if start == "header"
        else syntax_quick.steps(text, at)
        if start == "system_item" and text.startswith("steps")
        else syntax_quick.param(text, at)
        if start == "system_item" and text.startswith("param")
        else None
    )
    if quick is not None:
        return quick, None
    try:
        tree = _parser().parse(text, start=start)
        return Build(text, at).node(tree), None
    except lark.exceptions.UnexpectedInput as err:  # a grammar error must not hide as input's
        placed = _placement_item(text, at) if start == "system_item" else None
        return None, placed or _syntax_diagnostic(err, text, at)
    except SyntaxFailure as failure:
        return None, failure.diagnostic
    except RecursionError:
        return None, Diagnostic(
            "syntax-error",
            "this item nests too deeply to parse",
            Span(at, at + len(text)),
            help="split the expression with `let`",
        )


def parse_decl(text: str) -> ParsedDecl:
    """A declaration's text (from its keyword at column 0 to its end), parsed at offset 0."""
    parsed, _ = _parse_piece(text, DECLARATION)
    assert isinstance(parsed, ParsedDecl)
    return parsed


def parse_cache_info() -> CacheInfo:
    """Hits and misses of the parse memo (declarations and items together): a miss is a
    declaration or an item parsed anew."""
    t = _PIECES
    return CacheInfo(t.hits, t.misses, t.max_entries, len(t))


@memoized("parser.placed", PLACED, PLACED_TEXT, lambda parsed, offset: len(parsed.text))
def _placed(parsed: ParsedDecl, offset: int) -> ast.Decl:
    """A declaration's tree at its offset in the file; kept while that offset is in use."""
    return shift(parsed.decl, offset)


def clear_memos() -> None:
    """Forget every parsed piece and placed declaration."""
    _PIECES.clear()
    _MOVED.clear()
    _placed.cache_clear()


def shift_diagnostic(d: Diagnostic, by: int) -> Diagnostic:
    """The same diagnostic with its span and related spans moved by `by` characters."""
    if by == 0:
        return d
    return dataclasses.replace(
        d,
        span=shift_span(d.span, by) if d.span is not None else None,
        related=tuple(Related(shift_span(r.span, by), r.message) for r in d.related),
    )


@dataclass(frozen=True)
class ParsedFile:
    """A file parsed declaration by declaration: each one at offset 0 and where it starts."""

    decls: tuple[tuple[ParsedDecl, int], ...]
    diagnostics: tuple[Diagnostic, ...]  # stray text first, then each declaration's, in order

    @functools.cached_property
    def module(self) -> ast.Module:
        """The tree with spans into the file, made when first asked for."""
        with collector_paused():
            return ast.Module(tuple(_placed(parsed, offset) for parsed, offset in self.decls))


def parse_file(text: str) -> ParsedFile:
    """Parse a whole file into its declarations. Never raises on any input text."""
    bounds, strays = cut_decls(text)
    diags: list[Diagnostic] = []
    for stray in strays:
        diags.append(
            Diagnostic(
                "syntax-error",
                "expected `system`, `plan` or `pairing` at the start of a line",
                Span(
                    stray.piece.span.start,
                    stray.piece.span.start + len(stray.piece.text.split()[0]),
                ),
                help="declarations start at column 0 with their keyword",
            )
        )
    decls: list[tuple[ParsedDecl, int]] = []
    for start, end in bounds:
        parsed = parse_decl(text[start:end])
        decls.append((parsed, start))
        diags += (shift_diagnostic(d, start) for d in parsed.diagnostics)
    return ParsedFile(tuple(decls), tuple(diags))


def parse(text: str) -> tuple[ast.Module, list[Diagnostic]]:
    """Parse a whole file. Never raises on any input text."""
    parsed = parse_file(text)
    return parsed.module, list(parsed.diagnostics)


def _parse_decl(dp: DeclPieces, diags: list[Diagnostic]) -> ast.Decl:
    header, err = _parse_piece(dp.header.text, "header", dp.header.span.start)
    if err is not None:
        diags.append(err)
        return ast.Decl("error", "", dp.header.span, None, None, (), dp.span, dp.body)
    kind, name, name_span, target, target_span = header
    if dp.missing_open:
        at = dp.header.span.end  # the character after the header; none at the end of the text
        diags.append(
            Diagnostic(
                "syntax-error",
                f"expected `{{` after the {kind} header",
                Span(at, min(at + 1, dp.span.end)),
            )
        )
    if dp.unclosed:
        diags.append(
            Diagnostic(
                "syntax-error",
                f"unclosed `{{` of {kind} `{name}`",
                Span(dp.body.start - 1, dp.body.start),
                help="add `}` where the body ends",
            )
        )
    items: list[object] = []
    start = ITEM_START.get(kind)
    for piece in dp.items:
        if start is None:
            items.append(ast.ErrorItem(piece.text, piece.span))
            continue
        item, err = _parse_piece(piece.text, start, piece.span.start)
        if err is not None:
            diags.append(err)
            items.append(ast.ErrorItem(piece.text, piece.span))
        else:
            items.append(item)
    return ast.Decl(kind, name, name_span, target, target_span, tuple(items), dp.span, dp.body)
