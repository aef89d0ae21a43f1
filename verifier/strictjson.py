"""Reading JSON strictly (docs/fairness.md §2).

Everything a verifier reads — a transcript, an evidence file — goes through
:func:`parse`: UTF-8 JSON text of at most 16 MiB, nesting at most 64 deep, no object
with the same key twice, every number an integer of at most 2⁵³ − 1 in absolute
value (no fraction, no exponent, no ``-0``).  Anything else raises
:class:`InputError` (``rummy-verify`` exit 2, failure name ``read``) before any check
runs.  :func:`read_stream` reads in pieces, so input larger than the limit is
refused without being read whole.

:func:`json_data_problem` is the same rule for a value already in memory (the
verifier's API accepts any Python value and judges it by this rule first).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import IO, Any, Final, NoReturn

MAX_BYTES: Final = 16 * 1024 * 1024
MAX_DEPTH: Final = 64
MAX_SAFE: Final = (1 << 53) - 1
CHUNK: Final = 1 << 20
READ_CHECK: Final = "read"

# A JSON string (used only to skip strings while counting brackets).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
# The text outside strings as brackets only, "{" read as "[" and "}" as "]" (depth does
# not tell them apart), and with every digit read as "0".
_AS_BRACKETS: Final = (bytes.maketrans(b"{}", b"[]"), bytes(c for c in range(256) if c not in b"[]{}"))
_AS_ZEROS: Final = bytes.maketrans(b"123456789", b"000000000")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class InputError(Exception):
    """Input that cannot be read (§2): ``rummy-verify`` exits 2, the failure is named ``read``."""

    check = READ_CHECK


def _fail(message: str) -> NoReturn:
    raise InputError(message)


# --------------------------------------------------------------------------- bytes in
def read_stream(stream: IO[bytes], name: str, limit: int = MAX_BYTES) -> bytes:
    """At most ``limit`` bytes from ``stream``, read in pieces; more is refused
    (having read at most ``limit`` + one piece)."""
    parts: list[bytes] = []
    total = 0
    while True:
        piece = stream.read(min(CHUNK, limit + 1 - total))
        if not piece:
            break
        parts.append(piece)
        total += len(piece)
        if total > limit:
            _fail(f"{name} is larger than {limit} bytes ({limit // (1024 * 1024)} MiB); it was not read further")
    return b"".join(parts)


# --------------------------------------------------------------------------- parsing
def _outside_strings(data: bytes) -> bytes:
    """The JSON text without its strings: brackets, separators, numbers, literals."""
    if b"\\" not in data:  # no escapes: every quote opens or closes a string
        return b"".join(data.split(b'"')[0::2])
    return _STRING.sub(b"", data)


def max_depth(data: bytes, limit: int = MAX_DEPTH) -> int:
    """The nesting depth of JSON text, counted cheaply (strings skipped) before
    ``json.loads`` could recurse; more than ``limit`` as soon as it is exceeded."""
    return _depth(_outside_strings(data), limit)


def _depth(bare: bytes, limit: int) -> int:
    """The depth of the brackets of ``bare``.  Each pass removes every innermost pair
    ``[]``, so brackets that vanish after k passes (at most ``limit + 1``) nest exactly
    k deep; anything else (deeper, or unbalanced) is counted one bracket at a time."""
    brackets = bare.translate(*_AS_BRACKETS)
    passes = 0
    while brackets and passes <= limit:
        inner = brackets.replace(b"[]", b"")
        if len(inner) == len(brackets):
            break
        brackets, passes = inner, passes + 1
    if not brackets:
        return passes
    return _depth_counted(bare, limit)


def _suspect_integers(bare: bytes) -> bool:
    """Whether an integer of the text outside strings could break §2: ``-0``, or 16
    digits and more (beyond 2^53 - 1 takes 16)."""
    return b"-0" in bare or b"0" * 16 in bare.translate(_AS_ZEROS)


def _depth_counted(bare: bytes, limit: int) -> int:
    depth = 0
    deepest = 0
    for b in _NOT_BRACKET.sub(b"", bare):
        if b in b"[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        else:
            depth -= 1
    return deepest


def _int(text: str) -> int:
    # The JSON grammar already gives -?(0|[1-9][0-9]*); refuse -0 and anything
    # beyond 2^53 - 1 before converting (a 5,000-digit integer is never built).
    if text == "-0":
        _fail("the number -0 is not allowed (§2)")
    if len(text) - (text[0] == "-") > 16 or abs(value := int(text)) > MAX_SAFE:
        _fail(f"the integer {text[:24]}{'…' if len(text) > 24 else ''} is beyond ±(2^53 - 1) (§2)")
    return value


def _no_float(text: str) -> NoReturn:
    _fail(f"the number {text[:24]} is not an integer: fractions and exponents are not allowed (§2)")


def _no_constant(text: str) -> NoReturn:
    _fail(f"{text} is not JSON (§2)")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        _fail(f"an object has the key {json.dumps(dup)[:80]} twice (§2)")
    return out


# Every integer through _int: exact messages, in the order of the text.
_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_int=_int, parse_float=_no_float, parse_constant=_no_constant
)
# The same rules for text whose integers are all within §2 (no -0, no 16 digits): read
# at C speed; anything it refuses is read again by _DECODER for the exact message.
_FAST_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_float=_no_float, parse_constant=_no_constant)


def _fast_decode(text: str) -> Any:
    """``text`` decoded by :data:`_FAST_DECODER`, or None when it refuses it (or the
    text is ``null``): then :data:`_DECODER` reads it again and says why."""
    try:
        return _FAST_DECODER.decode(text)
    except (InputError, ValueError, RecursionError):
        return None


def parse(data: bytes | str, name: str = "the input", *, top: Callable[[Any], bool] | None = None) -> Any:
    """Strictly parse JSON text (§2); the top level must be an object unless
    ``top`` accepts it."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if len(data) > MAX_BYTES:
        _fail(f"{name} is larger than {MAX_BYTES} bytes (16 MiB)")
    if data.startswith(b"\xef\xbb\xbf"):
        _fail(f"{name} starts with a byte order mark; JSON text is UTF-8 without one (§2)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        _fail(f"{name} is not UTF-8 text (byte {e.start}) (§2)")
    bare = _outside_strings(data)
    if _depth(bare, MAX_DEPTH) > MAX_DEPTH:
        _fail(f"{name} nests arrays and objects more than {MAX_DEPTH} deep (§2)")
    value = None if _suspect_integers(bare) else _fast_decode(text)
    try:
        if value is None:
            value = _DECODER.decode(text)
    except json.JSONDecodeError as e:
        _fail(f"{name} is not JSON: {e.msg} at line {e.lineno} column {e.colno}")
    except (ValueError, RecursionError) as e:  # pragma: no cover - the scans above come first
        _fail(f"{name} is not JSON (§2): {str(e)[:100]}")
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):
        problem = json_data_problem(value)
        if problem:
            _fail(f"{name}: {problem} (§2)")
    if top is None:
        if not isinstance(value, dict):
            _fail(f"{name} is not a JSON object at the top level (§2)")
    elif not top(value):
        _fail(f"{name} does not have the expected shape at the top level")
    return value


def unwrap_transcript(value: Any, name: str = "the input") -> dict[str, Any]:
    """A transcript, or a test-vector file ``{"_about": …, "transcript": {…}}``
    read as its transcript (§2).  Any other object is a transcript to ``format``: one
    without a ``"protocol"`` fails there (§13: no field missing), not here, since §2
    alone makes input unreadable."""
    if isinstance(value, dict) and "_about" in value and "transcript" in value:
        value = value["transcript"]
        if not isinstance(value, dict):
            _fail(f'{name} is a test-vector file whose "transcript" is not a JSON object (§2)')
    if not isinstance(value, dict):
        _fail(f"{name} is not a JSON object at the top level (§2)")
    return value


# --------------------------------------------------------------------------- values in memory
def json_data_problem(value: Any, depth: int = 0) -> str | None:
    """Why ``value`` is not JSON data in the sense of §2 (None when it is): only
    objects with string keys, arrays, strings (valid Unicode), integers within
    ±(2⁵³ − 1), true, false and null, nested at most 64 deep.  Never recurses past
    that depth, never converts a huge integer to text."""
    tv = type(value)
    if tv is str:
        return None if value.isascii() else _text_problem(value)
    if tv is int:
        return None if -MAX_SAFE <= value <= MAX_SAFE else "an integer is beyond ±(2^53 - 1)"
    if tv is bool or value is None:
        return None
    if tv is dict or tv is list:
        if depth >= MAX_DEPTH:
            return f"arrays and objects nest more than {MAX_DEPTH} deep"
        if tv is dict:
            for k, v in value.items():
                if type(k) is not str:
                    return "an object key is not a string"
                p = None if k.isascii() else _text_problem(k)
                p = p or json_data_problem(v, depth + 1)
                if p:
                    return p
            return None
        if len(value) > 4:
            kinds = set(map(type, value))
            if kinds == {int}:  # a list of card ids, say: checked at C speed
                if -MAX_SAFE <= min(value) and max(value) <= MAX_SAFE:
                    return None
                return "an integer is beyond ±(2^53 - 1)"
            if kinds == {str} and all(map(str.isascii, value)):
                return None
        for v in value:
            p = json_data_problem(v, depth + 1)
            if p:
                return p
        return None
    if tv is float:
        return "a number is not an integer (a float)"
    return f"a {tv.__name__} is not a JSON value"


def _text_problem(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "a string holds a lone surrogate (not Unicode text)"
    return None
