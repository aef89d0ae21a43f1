"""A regular expression that matches exactly the names :func:`service.wire.name_problem`
accepts, for the OpenAPI document (``/api/openapi.json``): a client or a fuzzer that
follows the document's ``pattern`` sends no name the server refuses, and every name
the pattern refuses the server refuses too.

The character classes are spelled out code point by code point from this Python's
Unicode database (the one the server checks names with), so the pattern means the
same in every regex engine: ``\\uXXXX`` escapes for the Basic Multilingual Plane, the
characters themselves above it (ECMA-262, Python ``re`` and Rust's regex all read
both).  It is built once, on first use (a pass over every code point).
"""

from __future__ import annotations

import unicodedata
from functools import cache

from service.wire import _JOINERS, BIDI_CONTROLS, MAX_COMBINING_RUN

_REFUSED_CATEGORIES = frozenset({"Cc", "Cs", "Cn", "Zl", "Zp"})
_MARKS = frozenset({"Mn", "Me"})


def _allowed(ch: str) -> bool:
    category = unicodedata.category(ch)
    if ch in BIDI_CONTROLS or category in _REFUSED_CATEGORIES:
        return False
    return category != "Cf" or ch in _JOINERS


def _char(cp: int) -> str:
    return f"\\u{cp:04x}" if cp <= 0xFFFF else chr(cp)


def _char_class(code_points: list[int]) -> str:
    """``[...]`` of the code points (ascending), as ranges."""
    spans: list[list[int]] = []
    for cp in code_points:
        if spans and spans[-1][1] == cp - 1:
            spans[-1][1] = cp
        else:
            spans.append([cp, cp])
    body = "".join(_char(a) if a == b else f"{_char(a)}-{_char(b)}" for a, b in spans)
    return f"[{body}]"


@cache
def name_pattern(longest: int) -> str:
    """``^…$``: 1 to ``longest`` allowed characters; no space first or last; at most
    ``MAX_COMBINING_RUN`` combining marks in a row.  The length is in the pattern,
    so the schema needs no ``minLength``/``maxLength`` (a tool that folds those into
    the pattern rewrites it, and may spell characters its regex engine cannot read)."""
    allowed: list[int] = []
    spaces: list[int] = []
    marks: list[int] = []
    for cp in range(0x110000):
        ch = chr(cp)
        if not _allowed(ch):
            continue
        allowed.append(cp)
        if ch.isspace():  # what str.strip() takes away: a name may not begin or end with one
            spaces.append(cp)
        if unicodedata.category(ch) in _MARKS:
            marks.append(cp)
    space, mark = _char_class(spaces), _char_class(marks)
    return f"^(?!{space})(?!.*{space}$)(?!.*{mark}{{{MAX_COMBINING_RUN + 1}}}){_char_class(allowed)}{{1,{longest}}}$"
