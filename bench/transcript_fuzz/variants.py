"""The type and edge variants a mutation puts in place of a value."""

from __future__ import annotations

import copy
from typing import Any

from bench.transcript_fuzz.common import MAX_SAFE

ASTRAL = "\U0001f0a1"  # 🂡, two UTF-16 units, one code point


def int_variants(n: int) -> list[Any]:
    return [
        n + 1,
        n - 1,
        -n if n else -1,
        0,
        str(n),
        n == 1,
        bool(n),
        None,
        MAX_SAFE,
        -MAX_SAFE,
        MAX_SAFE + 1,
        2**31 - 1,
        2**31,
        2**32,
        2**32 + n,
        2**64 + n,
        float(n),
        [n],
        {"n": n},
    ]


def str_variants(s: str) -> list[Any]:
    out: list[Any] = [
        s.upper(),
        s + "0",
        s[:-1],
        "",
        s + "\n",
        " " + s,
        s + "é",
        s + ASTRAL,
        s.replace("a", "A", 1),
        None,
        1,
        0,
        [s],
        s + "\u0000",
        s * 2,
        "x" * 64,
        "x" * 65,
        "é" * 500,
        ASTRAL * 500,
        ASTRAL * 501,
        "a" * 501,
        "\u212a",  # KELVIN SIGN: upper-case folds to ASCII in some libraries
        "\ufb01" * 3,
    ]
    if s.isdigit():
        out += [
            int(s),
            "0" + s,
            "+" + s,
            s + " ",
            "\uff10" if s == "0" else s.translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")),
            s + "_0",
            "-" + s,
            s + ".0",
        ]
    return out


def variants(v: Any) -> list[Any]:
    if isinstance(v, bool):
        return [not v, int(v), str(v).lower(), None, 0, 1]
    if isinstance(v, int):
        return int_variants(v)
    if isinstance(v, str):
        return str_variants(v)
    if v is None:
        return [0, "", {}, [], False, "null"]
    if isinstance(v, list):
        out: list[Any] = [[], {}, None, list(reversed(v))]
        if v:
            out += [v[:-1], [*v, copy.deepcopy(v[-1])], [*v, copy.deepcopy(v[0])], v[1:], [v[0]], [v]]
        return out
    if isinstance(v, dict):
        out = [{}, [], None]
        for k in v:
            out.append({kk: vv for kk, vv in v.items() if kk != k})
        out += [{**v, "extra": 1}, {**v, "": None}, {**v, "__proto__": {}}]
        return out
    return [None]
