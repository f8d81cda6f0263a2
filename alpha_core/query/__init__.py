"""Questions an editor asks of one analysed file: what is at an offset and its shape, where a
name is defined and used, which names are in scope, the outline, how each word reads, what a
built-in takes, what a pairing misses. Pure functions of an Analysis (or its tree): no IO, no
face library.
"""

from alpha_core.query.names import (
    ScopeName,
    definition_at,
    links,
    names_in_scope,
    references_at,
    role_decls,
)
from alpha_core.query.outline import Symbol, outline
from alpha_core.query.pairings import pairing_gaps, pairing_insertion, range_text, ref_range
from alpha_core.query.signatures import SUMMARIES, builtin_args, builtin_signature
from alpha_core.query.tree import (
    children,
    decl_at,
    enclosing,
    fn_signature,
    shape_at,
    type_text,
    walk,
)
from alpha_core.query.words import KEYWORDS, Word, word_kinds, words

__all__ = [
    "KEYWORDS",
    "SUMMARIES",
    "ScopeName",
    "Symbol",
    "Word",
    "builtin_args",
    "builtin_signature",
    "children",
    "decl_at",
    "definition_at",
    "enclosing",
    "fn_signature",
    "links",
    "names_in_scope",
    "outline",
    "pairing_gaps",
    "pairing_insertion",
    "range_text",
    "ref_range",
    "references_at",
    "role_decls",
    "shape_at",
    "type_text",
    "walk",
    "word_kinds",
    "words",
]
