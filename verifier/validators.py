"""The small validators :mod:`verifier.schema` is composed of.

A validator is called ``v(x, path)`` and raises :class:`SchemaError` with the path of
the offending value and what was expected.  Each one built here is a :class:`Rule`,
which also carries the same test as a bare predicate, ``v.ok(x)``: a composite rule
first asks its parts' predicates — no path built, no message, the common case of a
value that is right — and only when one says no walks the value again the long way
to say where and why.  ``ok(x)`` never accepts what the long way refuses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from verifier.strictjson import MAX_SAFE

Path = tuple[str | int, ...]
Validator = Callable[[Any, Path], None]
Predicate = Callable[[Any], bool]


class SchemaError(Exception):
    def __init__(self, path: Path, message: str, expected: Any = None, found: Any = None) -> None:
        super().__init__(f"{render_path(path)}: {message}")
        self.path = path
        self.message = message
        self.expected = expected
        self.found = found

    @property
    def record(self) -> int | None:
        if len(self.path) >= 2 and self.path[0] == "log" and isinstance(self.path[1], int):
            return self.path[1]
        return None


def render_path(path: Path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out or "the transcript"


def describe(value: Any) -> str:
    """A short, safe description of a JSON value's type (for messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def bad(path: Path, expected: str, value: Any, message: str | None = None) -> SchemaError:
    return SchemaError(path, message or f"expected {expected}, found {describe(value)}", expected, value)


def short_value(x: Any) -> str:
    if isinstance(x, str):
        return repr(x[:40] + ("…" if len(x) > 40 else ""))
    if type(x) is int and abs(x) <= MAX_SAFE:
        return str(x)
    return describe(x)


# --------------------------------------------------------------------------- rules
class Rule:
    """A validator with its predicate: ``rule(x, path)`` raises :class:`SchemaError`
    unless ``rule.ok(x)``.  ``kind`` is the one type a rule asks for and nothing more
    (a string, an object), ``bounds`` the range of an integer rule: what a composite
    rule tests inline instead of calling the rule."""

    __slots__ = ("_explain", "bounds", "kind", "ok")

    def __init__(
        self,
        ok: Predicate,
        explain: Validator,
        *,
        kind: type | None = None,
        bounds: tuple[int, int] | None = None,
    ) -> None:
        self.ok = ok
        self._explain = explain  # raises: called only when ok(x) is false
        self.kind = kind
        self.bounds = bounds

    def __call__(self, x: Any, path: Path) -> None:
        if not self.ok(x):
            self._explain(x, path)


def predicate(v: Validator) -> Predicate:
    """The predicate of any validator (a plain function's: whether it raises)."""
    if isinstance(v, Rule):
        return v.ok

    def ok(x: Any) -> bool:
        try:
            v(x, ())
        except SchemaError:
            return False
        return True

    return ok


def of_type(kind: type, what: str) -> Rule:
    """Exactly ``kind`` (``type(x) is kind``: ``true`` is not an integer)."""

    def explain(x: Any, path: Path) -> None:
        raise bad(path, what, x)

    return Rule(lambda x: type(x) is kind, explain, kind=kind)


STRING: Final = of_type(str, "a string")
boolean: Final = of_type(bool, "true or false")
any_object: Final = of_type(dict, "an object")


def integer(lo: int = -MAX_SAFE, hi: int = MAX_SAFE) -> Rule:
    """``int[lo, hi]``: a JSON integer (never true/false, never a string)."""
    what = f"an integer in [{lo}, {hi}]"

    def explain(x: Any, path: Path) -> None:
        if type(x) is not int:
            raise bad(path, what, x)
        raise bad(path, what, x, f"expected {what}, found {x if abs(x) <= MAX_SAFE else 'a larger one'}")

    return Rule(lambda x: type(x) is int and lo <= x <= hi, explain, bounds=(lo, hi))


def const(value: Any) -> Rule:
    kind = type(value)

    def explain(x: Any, path: Path) -> None:
        raise bad(path, repr(value), x, f"expected {value!r}, found {short_value(x)}")

    return Rule(lambda x: type(x) is kind and x == value, explain)


def one_of(*values: str) -> Rule:
    allowed = frozenset(values)

    def explain(x: Any, path: Path) -> None:
        raise bad(path, " | ".join(values), x, f"expected one of {', '.join(values)}, found {short_value(x)}")

    return Rule(lambda x: type(x) is str and x in allowed, explain)


def pattern(regex: str, what: str) -> Rule:
    match = re.compile(regex).fullmatch

    def explain(x: Any, path: Path) -> None:
        raise bad(path, what, x, f"expected {what}, found {short_value(x)}")

    return Rule(lambda x: type(x) is str and match(x) is not None, explain)


def hexstr(nbytes: int) -> Rule:
    """``hex(n)``: exactly 2n lowercase hex digits."""
    return pattern(f"[0-9a-f]{{{2 * nbytes}}}", f"{2 * nbytes} lowercase hex digits")


def member(values: Sequence[int], what: str) -> Rule:
    allowed = frozenset(values)

    def explain(x: Any, path: Path) -> None:
        shown = ", ".join(map(str, sorted(allowed)))
        raise bad(path, what, x, f"expected {what} ({shown}), found {short_value(x)}")

    return Rule(lambda x: type(x) is int and x in allowed, explain)


def nullable(inner: Validator) -> Rule:
    ok = predicate(inner)
    return Rule(lambda x: x is None or ok(x), inner)


def either(*options: Validator, what: str) -> Rule:
    oks = [predicate(o) for o in options]

    def explain(x: Any, path: Path) -> None:
        raise bad(path, what, x, f"expected {what}, found {short_value(x)}")

    return Rule(lambda x: any(ok(x) for ok in oks), explain)


def list_of(item: Validator | None, lo: int = 0, hi: int | None = None) -> Rule:
    def explain(x: Any, path: Path) -> None:
        if type(x) is not list:
            raise bad(path, "an array", x)
        if len(x) < lo or (hi is not None and len(x) > hi):
            size = f"{lo} to {hi}" if hi is not None else f"at least {lo}"
            raise SchemaError(path, f"expected an array of {size} entries, found {len(x)}", size, len(x))
        if item is not None:
            for n, e in enumerate(x):
                item(e, (*path, n))

    items = _items_ok(item)

    def ok(x: Any) -> bool:
        return type(x) is list and lo <= len(x) and (hi is None or len(x) <= hi) and items(x)

    return Rule(ok, explain)


def _items_ok(item: Validator | None) -> Predicate:
    """Whether every entry of a list is right: for a type or an integer range, tested
    over the whole list at once."""
    if item is None:
        return lambda x: True
    if isinstance(item, Rule) and item.kind is not None:
        kinds = {item.kind}
        return lambda x: set(map(type, x)) <= kinds
    if isinstance(item, Rule) and item.bounds is not None:
        low, high = item.bounds
        ints = {int}
        return lambda x: not x or (set(map(type, x)) == ints and low <= min(x) and max(x) <= high)
    ok = predicate(item)
    return lambda x: all(map(ok, x))


def obj(fields: Mapping[str, Validator], optional: Mapping[str, Validator] | None = None) -> Rule:
    """An object with exactly ``fields`` (each required) and perhaps ``optional``."""
    opt = dict(optional or {})
    required = frozenset(fields)
    allowed = required | set(opt)
    checks = list(fields.items())

    def explain(x: Any, path: Path) -> None:
        if type(x) is not dict:
            raise bad(path, "an object", x)
        keys = x.keys()
        if keys != required and not (opt and required <= keys <= allowed):
            missing = [k for k in fields if k not in x]
            if missing:
                raise SchemaError(path, f"the field {missing[0]!r} is missing", sorted(fields), sorted(x))
            extra = sorted(k for k in x if k not in allowed)
            raise SchemaError(path, f"unexpected field {extra[0][:64]!r}", sorted(allowed), sorted(x))
        for k, f in checks:
            f(x[k], (*path, k))
        for k, f in opt.items():
            if k in x:
                f(x[k], (*path, k))

    typed = [(k, f.kind) for k, f in checks if isinstance(f, Rule) and f.kind is not None]
    tested = [(k, predicate(f)) for k, f in checks if not (isinstance(f, Rule) and f.kind is not None)]
    optional_ok = [(k, predicate(f)) for k, f in opt.items()]

    def ok(x: Any) -> bool:
        if type(x) is not dict:
            return False
        keys = x.keys()
        if keys != required and not (opt and required <= keys <= allowed):
            return False
        for k, kind in typed:
            if type(x[k]) is not kind:
                return False
        for k, test in tested:
            if not test(x[k]):
                return False
        for k, test in optional_ok:
            if k in x and not test(x[k]):
                return False
        return True

    return Rule(ok, explain)
