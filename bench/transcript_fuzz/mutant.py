"""One mutant: a hand, a few weighted mutations, re-sealed, maybe changed after
sealing or as text, maybe verified with a pinned key or a seat's evidence.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import random
from typing import Any

from bench.transcript_fuzz.after_seal import post_seal, raw_mutation, serialize
from bench.transcript_fuzz.common import SEED, Mutation, NotHere, clone
from bench.transcript_fuzz.hands import bases
from bench.transcript_fuzz.mutate_evidence import _EVIDENCE, m_backdate, m_owed
from bench.transcript_fuzz.mutate_log import m_events, m_records, m_seeds, m_times, m_void
from bench.transcript_fuzz.mutate_result import m_actions, m_penalty, m_regroup, m_result
from bench.transcript_fuzz.mutate_transcript import (
    m_any_field,
    m_prev_head,
    m_rules,
    m_seats,
    m_structural,
    m_transcript_field,
    m_windows,
)
from bench.transcript_fuzz.seal import OTHER_SERVER, SERVER, reseal

MUTATIONS: list[tuple[Mutation, int]] = [
    (m_penalty, 3),
    (m_owed, 3),
    (m_backdate, 3),
    (m_regroup, 3),
    (m_any_field, 4),
    (m_structural, 1),
    (m_transcript_field, 4),
    (m_rules, 4),
    (m_seats, 4),
    (m_windows, 2),
    (m_prev_head, 1),
    (m_times, 8),
    (m_seeds, 4),
    (m_void, 8),
    (m_records, 4),
    (m_events, 8),
    (m_result, 7),
    (m_actions, 5),
]


# --------------------------------------------------------------------------- one mutant
@dataclasses.dataclass
class Mutant:
    n: int
    base: str
    what: list[str]
    data: bytes
    allow_v1: bool
    key: str | None = None
    evidence: bytes | None = None

    def case(self) -> dict[str, Any]:
        return {
            "b64": base64.b64encode(self.data).decode(),
            "allow_v1": self.allow_v1,
            "key": self.key,
            "evidence_b64": None if self.evidence is None else base64.b64encode(self.evidence).decode(),
        }


def make_mutant(n: int, seed: int = SEED, focus: str = "") -> Mutant:
    """Mutant ``n`` of the seed (the same every run).  ``focus``: "evidence" takes only
    hands with a seat's evidence, and always gives it."""
    rng = random.Random(f"{seed}/{focus}/{n}" if focus else f"{seed}/{n}")
    bs = bases(seed)
    if focus == "evidence":
        bs = tuple(b for b in bs if b.evidence is not None)
    elif focus == "v1":
        bs = tuple(b for b in bs if b.allow_v1)
    # the played hands and the honest vectors more often than each adversarial file
    weights = [4 if b.name.startswith(("played/", "v2-")) or b.evidence else 1 for b in bs]
    base = rng.choices(bs, weights)[0]
    t = clone(base.t)
    what: list[str] = []
    evidence = None
    keep_keys = False
    _EVIDENCE[:] = base.evidence or []
    if base.evidence is not None and (focus == "evidence" or rng.random() < 0.6):
        evidence = json.dumps(base.evidence).encode()
        keep_keys = True
    for _ in range(rng.choice([0, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 3])):
        for _attempt in range(20):
            trial = clone(t)
            m = rng.choices([f for f, _ in MUTATIONS], [w for _, w in MUTATIONS])[0]
            try:
                what.append(m(trial, rng))
            except (NotHere, KeyError, IndexError, TypeError, AttributeError, ValueError):
                continue
            t = trial
            break
    roll = rng.random()
    players = "keep" if keep_keys or roll < 0.35 else ("house" if roll < 0.92 else "none")
    chain = rng.random() > 0.03
    sig = rng.random() > 0.03
    reseal(t, players=players, chain=chain, sig=sig)
    what.append(f"resealed (players: {players}{'' if chain else ', not re-chained'}{'' if sig else ', not re-signed'})")
    if rng.random() < 0.08:
        try:
            what.append(post_seal(t, rng))
        except (NotHere, KeyError, IndexError, TypeError, AttributeError, ValueError):
            pass
    data = serialize(t, rng)
    if rng.random() < 0.12:
        op, data = raw_mutation(data, rng)
        what.append(f"raw text: {op}")
    key = None
    if rng.random() < 0.1:
        key = rng.choice([SERVER.pub, OTHER_SERVER.pub, SERVER.pub.upper()])
        what.append(f"pinned key {key[:8]}…")
    return Mutant(n, base.name, what, data, base.allow_v1, key, evidence)
