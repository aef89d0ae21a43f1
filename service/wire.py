"""The edge: every REST body and WebSocket frame is parsed with size, depth and number
limits and checked against its schema before anything else runs.

Anything that does not fit is a :class:`WireError` (a typed 4xx, or a typed error
frame on a socket that stays open): nothing is created, nothing is logged as a
traceback.  Integers are integers in their stated ranges (booleans and floats are
refused), strings are valid text without NUL, ids fit their columns.  The schemas
below are the single description of what each message may hold; docs/api.md lists
the same fields.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from service.errors import ServiceError

MAX_MESSAGE_BYTES: Final = 8 * 1024
MAX_INT_DIGITS: Final = 20  # json integers beyond this are refused before conversion
INT64_MAX: Final = 2**63 - 1
INT32_MAX: Final = 2**31 - 1
MAX_AMOUNT: Final = 10**15  # HT minor units: far above any real deposit, far below bigint (D18)
MAX_POINT_VALUE: Final = MAX_AMOUNT // 130  # 130 × point_value, the D20 hold, stays ≤ MAX_AMOUNT
MAX_CARD_ID: Final = 158  # three decks and three jokers (D1)

_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_TOKEN = re.compile(r"[\x21-\x7e]{1,256}")
_HEX = re.compile(r"[0-9a-f]*")


class WireError(ServiceError):
    """Input refused at the edge: ``code`` is the typed error code."""

    def __init__(self, message: str, code: str = "bad_message", status: int = 400) -> None:
        super().__init__(message, code=code, status=status)


# ----------------------------------------------------------------------------- parsing
def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError("integer too long")
    return int(text)


def _constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("an object has the same key twice")
    return out


def parse_object(raw: bytes | str, *, what: str = "message", max_bytes: int = MAX_MESSAGE_BYTES) -> dict[str, Any]:
    """A JSON object from at most ``max_bytes`` of UTF-8: deep nesting, huge integers,
    NaN, duplicate keys and invalid text are refused as ``bad_message``."""
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise WireError(f"a {what} is at most {max_bytes} bytes", "message_too_large", 413)
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        data = json.loads(text, parse_int=_int, parse_constant=_constant, object_pairs_hook=_no_duplicates)
    except (ValueError, RecursionError, UnicodeDecodeError) as e:
        raise WireError(f"the {what} is not valid JSON ({_reason(e)})") from None
    if not isinstance(data, dict):
        raise WireError(f"the {what} must be a JSON object")
    return data


def _reason(e: Exception) -> str:
    if isinstance(e, RecursionError):
        return "nested too deeply"
    if isinstance(e, json.JSONDecodeError):
        return e.msg
    return str(e)[:80]


# ----------------------------------------------------------------------------- schemas
class Spec:
    def check(self, value: Any, path: str) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class Int(Spec):
    lo: int
    hi: int
    choices: tuple[int, ...] = ()

    def check(self, value: Any, path: str) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise WireError(f"{path} must be an integer, not {_kind(value)}")
        if not self.lo <= value <= self.hi or (self.choices and value not in self.choices):
            allowed = ", ".join(map(str, self.choices)) if self.choices else f"{self.lo} to {self.hi}"
            raise WireError(f"{path} must be {allowed}, not {value}")
        return value


@dataclass(frozen=True)
class Text(Spec):
    lo: int = 1
    hi: int = 64
    pattern: re.Pattern[str] | None = None

    def check(self, value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise WireError(f"{path} must be a string, not {_kind(value)}")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise WireError(f"{path} is not valid text") from None
        if "\x00" in value:
            raise WireError(f"{path} may not contain NUL")
        if not self.lo <= len(value) <= self.hi:
            raise WireError(f"{path} must be {self.lo} to {self.hi} characters")
        if self.pattern is not None and not self.pattern.fullmatch(value):
            raise WireError(f"{path} has characters it may not have")
        return value


#: bidirectional formatting characters (Unicode's Bidi_Control property): they make a
#: name reorder the text around it ("· seat 6" shown as "6 taes ·")
BIDI_CONTROLS: Final = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
#: invisible format characters a name may hold: the zero-width (non-)joiner, which
#: some scripts and emoji sequences need; every other format character is refused
_JOINERS: Final = frozenset("\u200c\u200d")
MAX_COMBINING_RUN: Final = 4  # combining marks on one letter; more is "Zalgo" text that overflows its line


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot be a player's name, or None: a bidirectional control, a
    C0/C1 control, another invisible format character, a line or paragraph
    separator, a surrogate, a code point unassigned in the server's Unicode
    version, a pile of combining marks, or spaces at either end."""
    if value != value.strip() or not value.strip():
        return "may not begin or end with spaces, nor be only spaces"
    run = 0
    for ch in value:
        category = unicodedata.category(ch)
        what = None
        if ch in BIDI_CONTROLS:
            what = "a bidirectional control"
        elif category == "Cc":
            what = "a control character"
        elif category == "Cf" and ch not in _JOINERS:
            what = "an invisible format character"
        elif category in ("Zl", "Zp"):
            what = "a line or paragraph separator"
        elif category == "Cs":
            what = "a surrogate"
        elif category == "Cn":
            what = f"unassigned in Unicode {unicodedata.unidata_version}"
        if what is not None:
            label = unicodedata.name(ch, "")
            return f"U+{ord(ch):04X}{f' ({label})' if label else ''} is {what}"
        run = run + 1 if category in ("Mn", "Me") else 0
        if run > MAX_COMBINING_RUN:
            return f"has more than {MAX_COMBINING_RUN} combining marks on one character"
    return None


@dataclass(frozen=True)
class Name(Spec):
    """A player's name: 1 to ``hi`` characters of visible text (:func:`name_problem`),
    refused as ``bad_name``."""

    hi: int = 64

    def check(self, value: Any, path: str) -> str:
        text = Text(1, self.hi).check(value, path)
        problem = name_problem(text)
        if problem is not None:
            raise WireError(f"{path}: {problem}", "bad_name")
        return text


@dataclass(frozen=True)
class Hex(Spec):
    nbytes: int

    def check(self, value: Any, path: str) -> str:
        if not isinstance(value, str) or len(value) != 2 * self.nbytes or not _is_hex(value):
            raise WireError(f"{path} must be {self.nbytes} bytes as {2 * self.nbytes} lowercase hex digits")
        return value


def _is_hex(s: str) -> bool:
    return _HEX.fullmatch(s) is not None


@dataclass(frozen=True)
class Bool(Spec):
    def check(self, value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            raise WireError(f"{path} must be true or false, not {_kind(value)}")
        return value


@dataclass(frozen=True)
class ListOf(Spec):
    item: Spec
    hi: int

    def check(self, value: Any, path: str) -> list[Any]:
        if not isinstance(value, list):
            raise WireError(f"{path} must be a list, not {_kind(value)}")
        if len(value) > self.hi:
            raise WireError(f"{path} holds at most {self.hi} items")
        return [self.item.check(v, f"{path}[{n}]") for n, v in enumerate(value)]


@dataclass(frozen=True)
class Obj(Spec):
    required: Mapping[str, Spec]
    optional: Mapping[str, Spec] = None  # type: ignore[assignment]

    def check(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise WireError(f"{path} must be an object, not {_kind(value)}")
        optional = self.optional or {}
        unknown = set(value) - set(self.required) - set(optional)
        if unknown:
            raise WireError(f"{path} has unknown fields: {', '.join(sorted(map(str, unknown)))[:200]}")
        missing = [k for k in self.required if k not in value]
        if missing:
            raise WireError(f"{path} lacks {', '.join(missing)}")
        out = {k: spec.check(value[k], f"{path}.{k}") for k, spec in self.required.items()}
        out.update({k: spec.check(value[k], f"{path}.{k}") for k, spec in optional.items() if k in value})
        return out


def _kind(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number with a fraction", str: "a string"}.get(
        type(value), "null" if value is None else ("a list" if isinstance(value, list) else "an object")
    )


def check(spec: Obj, data: dict[str, Any], what: str = "body", code: str = "bad_message") -> dict[str, Any]:
    """``spec.check``; a refusal takes ``code`` unless a field named its own (``bad_name``)."""
    try:
        return spec.check(data, what)
    except WireError as e:
        raise WireError(e.message, code if e.code == "bad_message" else e.code, e.status) from None


ID: Final = Text(1, 64, _ID)
HAND_NO: Final = Int(1, INT32_MAX)
CARD: Final = Int(0, MAX_CARD_ID)
PUBLIC_KEY: Final = Hex(32)
SIGNATURE: Final = Hex(64)

# REST bodies
NAME: Final = Name(64)
NEW_PLAYER: Final = Obj({"name": NAME}, {"deposit": Int(1, MAX_AMOUNT), "bot": Bool(), "public_key": PUBLIC_KEY})
DEPOSIT: Final = Obj({"amount": Int(1, MAX_AMOUNT)})
NEW_TABLE: Final = Obj(
    {},
    {
        "seats": Int(4, 8, (4, 6, 8)),
        "point_value": Int(1, MAX_POINT_VALUE),
        "commission_bps": Int(0, 10_000),
        "turn_seconds": Int(1, 3600),
        "max_missed_turns": Int(1, 100),
        "min_players": Int(2, 8),
        "max_away_hands": Int(1, 100),
    },
)
SIT: Final = Obj({}, {"seat": Int(0, 7)})
SIGNED_LEAVE: Final = {"hand_no": HAND_NO, "prev": Hex(32), "sig": SIGNATURE}
LEAVE: Final = Obj({}, SIGNED_LEAVE)
PLAYER_KEY: Final = Obj({"public_key": PUBLIC_KEY})
SIGN_IN: Final = Obj({"token": Text(1, 256, _TOKEN)})
VOID: Final = Obj({"reason": Text(1, 500)})

# WebSocket frames: every one has an id and a type; then the type's own fields.
FRAME_BASE: Final = {"id": Text(1, 64), "type": Text(1, 16)}
ACTION: Final = Obj(
    {"kind": Text(1, 16)},
    {"card": CARD, "hint": ListOf(ListOf(CARD, 13), 13)},
)
FRAMES: Final[dict[str, Obj]] = {
    "ping": Obj(FRAME_BASE),
    # since: the newest record of a hand the client has seen; the snapshot then carries
    # only the events after it (docs/api.md, "join")
    "join": Obj({**FRAME_BASE, "table_id": ID}, {"since": Obj({"hand_no": HAND_NO, "i": Int(0, INT32_MAX)})}),
    "sit": Obj({**FRAME_BASE, "table_id": ID}, {"seat": Int(0, 7)}),
    "leave": Obj({**FRAME_BASE, "table_id": ID}, SIGNED_LEAVE),
    "commit": Obj({**FRAME_BASE, "table_id": ID, "hand_no": HAND_NO, "commit": Hex(32), "sig": SIGNATURE}),
    "reveal": Obj({**FRAME_BASE, "table_id": ID, "hand_no": HAND_NO, "seed": Hex(32), "sig": SIGNATURE}),
    "action": Obj(
        {**FRAME_BASE, "table_id": ID, "hand_no": HAND_NO, "action": ACTION, "prev": Hex(32), "sig": SIGNATURE}
    ),
}
#: the action kinds a player may send (``timeout`` is the server's own; ``leave`` is its own message)
PLAYER_ACTIONS: Final = ("draw_closed", "draw_open", "drop", "discard", "declare")


def frame(raw: str | bytes) -> tuple[str, dict[str, Any]]:
    """(message id or None, the checked frame).  A frame whose id could be read but
    whose fields are wrong raises a WireError carrying that id (``.msg_id``)."""
    data = parse_object(raw, what="message")
    try:  # text the answer can echo: no lone surrogate (valid JSON, not UTF-8), no NUL
        msg_id: str = FRAME_BASE["id"].check(data.get("id"), "message.id")
    except WireError:
        raise WireError("every message carries an 'id' string of 1 to 64 characters of text, without NUL") from None
    kind = data.get("type")
    spec = FRAMES.get(kind) if isinstance(kind, str) else None
    try:
        if spec is None:
            raise WireError(f"unknown message type {str(kind)[:32]!r}; known: {', '.join(FRAMES)}")
        checked = spec.check(data, "message")
        if kind == "action":
            a = checked["action"]
            if a["kind"] not in PLAYER_ACTIONS:
                raise WireError(f"message.action.kind must be one of {', '.join(PLAYER_ACTIONS)}")
            needs_card = a["kind"] in ("discard", "declare")
            if needs_card != ("card" in a) or ("hint" in a and a["kind"] != "declare"):
                raise WireError(f"a {a['kind']} action {'names' if needs_card else 'takes no'} card (a card id)")
    except WireError as e:
        e.msg_id = msg_id  # type: ignore[attr-defined]
        raise
    return msg_id, checked


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer …`` header, or None when it is absent or
    not a plausible token (raw bytes, spaces, over-long)."""
    if not header or not header.startswith("Bearer "):
        return None
    token = header[7:].strip()
    return token if _TOKEN.fullmatch(token) else None


def path_int(text: str, what: str, hi: int = INT64_MAX, lo: int = 1) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 19 or not lo <= int(text) <= hi:
        raise WireError(f"{what} is an integer from {lo} to {hi}", "bad_request")
    return int(text)


def path_id(text: str, what: str) -> str:
    if not _ID.fullmatch(text):
        raise WireError(f"{what} is 1 to 64 letters, digits or _.:-", "bad_request")
    return text


# ----------------------------------------------------------------------------- sent again
#: The header a deposit or a withdrawal may carry so that a second sending is answered
#: from the store instead of moving money again (service.once); its value: 8-100
#: letters, digits and ``._:-`` (a UUID fits).
IDEMPOTENCY_HEADER: Final = "Idempotency-Key"
IDEMPOTENCY_KEY: Final = re.compile(r"[A-Za-z0-9._:-]{8,100}")
#: The header of an answer given again from the store: ``true``
IDEMPOTENT_REPLAYED: Final = "Idempotent-Replayed"
