"""``--sweep``: every type and edge variant of the first value at each field pattern
of a few vectors, instead of random mutants.
"""

from __future__ import annotations

import json
from typing import Any

from bench.transcript_fuzz.common import SEED, _short, clone
from bench.transcript_fuzz.hands import bases
from bench.transcript_fuzz.mutant import Mutant
from bench.transcript_fuzz.paths import get, put, walk
from bench.transcript_fuzz.seal import reseal
from bench.transcript_fuzz.variants import ASTRAL


def pattern(t: dict[str, Any], path: tuple[Any, ...]) -> str:
    """A path with its list positions generalised: a record by its type (and, for an
    action, its kind), an event by its kind, any other position as ``*``."""
    out: list[str] = []
    x: Any = t
    for p in path:
        if isinstance(x, list):
            if out and out[-1] == "log" and isinstance(x[p], dict):
                r = x[p]
                kind = r.get("action", {}).get("kind") if isinstance(r.get("action"), dict) else None
                out.append(f"<{r.get('type')}{'/' + str(kind) if kind else ''}>")
            elif out and out[-1] == "events" and isinstance(x[p], dict):
                out.append(f"<{x[p].get('kind')}>")
            else:
                out.append("*")
        else:
            out.append(str(p))
        x = x[p]
    return "/".join(out)


SWEEP_BASES = (
    "v2-transcript-6seat-everything.json",
    "v2-transcript-8seat-seeds-and-leaves.json",
    "v2-transcript-void-mid-hand.json",
    "v2-transcript-void-seed-lost.json",
    "v2-transcript-headsup-withheld.json",
    "transcript-6seat-everything.json",
    "transcript-void.json",
)


def sweep_variants(v: Any) -> list[Any]:
    """The type and edge variants of the sweep: fewer than ``variants``, one of each kind."""
    if isinstance(v, bool):
        return [int(v), not v, None]
    if isinstance(v, int):
        return [str(v), v == 1, None, v + 1, -1, 2**31, [v]]
    if isinstance(v, str):
        return [v.upper() if v != v.upper() else v + "x", "", 1, None, v + "\n", v + ASTRAL]
    if v is None:
        return [0, "", {}, False]
    if isinstance(v, list):
        return [[], {}, None] + ([v[:-1], [*v, clone(v[-1])], [v[0], v[0], *v[2:]] if len(v) > 1 else []] if v else [])
    if isinstance(v, dict):
        return [[], None]
    return [None]


def sweep_mutants(seed: int = SEED, every: int = 1) -> list[Mutant]:
    """Every variant (``sweep_variants``) of the first value at each path pattern of a
    few vectors, every key of each object pattern deleted and an extra one added: a
    systematic sweep of §13's types, where a random fuzzer reaches each field rarely.
    ``every``: only each ``every``-th of them (the same ones every run)."""
    out: list[Mutant] = []
    by_name = {b.name: b for b in bases(seed)}
    seen: set[str] = set()
    n = -1
    for name in SWEEP_BASES:
        base = by_name[name]
        for path, v in list(walk(base.t)):
            if not path or path[-1] == "signature":
                continue
            pat = f"{base.t['protocol']}:{pattern(base.t, path)}"
            if pat in seen:
                continue
            seen.add(pat)
            todo: list[tuple[str, Any]] = [("variant", x) for x in sweep_variants(v)]
            if isinstance(v, dict):
                todo += [("delete", k) for k in v] + [("extra", None)]
            for what, x in todo:
                n += 1
                if n % every:
                    continue
                t = clone(base.t)
                if what == "variant":
                    put(t, path, clone(x))
                    desc = f"sweep {pat}: {_short(v)} -> {_short(x)}"
                elif what == "delete":
                    del get(t, path)[x]
                    desc = f"sweep {pat}: delete {x}"
                else:
                    get(t, path)["extra"] = 0
                    desc = f"sweep {pat}: an extra field"
                reseal(t, players="house")
                data = json.dumps(t, ensure_ascii=False).encode("utf-8", "surrogatepass")
                out.append(Mutant(n, name, [desc], data, base.allow_v1))
    return out
