"""What every part of the fuzzer shares: where the tree and its vectors are, the
protocols, the default seed, a deep copy, a value in a line, and a mutation's type.
"""

from __future__ import annotations

import copy
import json
import pathlib
import random
from collections.abc import Callable
from typing import Any

import orjson

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
VECTORS = ROOT / "verifier" / "vectors"
V1 = "rummy-pf/v1"
V2 = "rummy-pf/v2"
ZERO = "00" * 32
MAX_SAFE = 2**53 - 1
SEED = 20261208


def clone(x: Any) -> Any:
    """A deep copy (JSON data: orjson's round trip is some ten times copy.deepcopy's speed)."""
    try:
        return orjson.loads(orjson.dumps(x))
    except (orjson.JSONEncodeError, TypeError):
        return copy.deepcopy(x)


def _short(v: Any, n: int = 40) -> str:
    s = json.dumps(v, ensure_ascii=True) if not isinstance(v, float) else repr(v)
    return s if len(s) <= n else s[: n - 1] + "…"


Mutation = Callable[[dict[str, Any], random.Random], str]


class NotHere(Exception):
    """This mutation does not apply to this hand."""
