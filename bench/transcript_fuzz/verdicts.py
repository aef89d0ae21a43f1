"""A verdict (``Verdict``: what the two verifiers are compared on), and rummy-verify's
(Python) verdicts on the mutants.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from typing import Any

from bench.transcript_fuzz.mutant import Mutant
from verifier.strictjson import InputError, parse, unwrap_transcript
from verifier.transcript import verify_transcript

Verdict = dict[str, Any]


def python_verdict(data: bytes, allow_v1: bool, key: str | None, evidence: bytes | None) -> Verdict:
    """rummy-verify's verdict on these bytes, as its command reads them (§2, then §14)."""
    try:
        t = unwrap_transcript(parse(data))
        ev = None
        if evidence is not None:
            ev = parse(evidence, top=lambda v: True)
            if isinstance(ev, dict) and "_about" in ev and "evidence" in ev:
                ev = ev["evidence"]
    except InputError as e:
        return {"ok": False, "check": "read", "record": None, "item": None, "message": str(e)[:300], "warnings": []}
    pinned = None
    if key is not None:
        pinned = bytes.fromhex(key)
    rep = verify_transcript(t, pinned, ev, allow_v1=allow_v1, parsed=True)
    f = rep.failure
    item = None
    if f is not None and f.check == "evidence" and f.message.startswith("evidence item "):
        item = int(f.message.split()[2])
    return {
        "ok": rep.ok,
        "check": f.check if f else None,
        "record": f.record if f else None,
        "item": item,
        "message": f.message[:300] if f else None,
        "warnings": [w["code"] for w in rep.warnings],
    }


def _py_case(c: tuple[bytes, bool, str | None, bytes | None]) -> Verdict:
    return python_verdict(*c)


def python_verdicts(ms: list[Mutant], jobs: int) -> list[Verdict]:
    args = [(m.data, m.allow_v1, m.key, m.evidence) for m in ms]
    if jobs <= 1:
        return [_py_case(a) for a in args]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(_py_case, args, chunksize=16))
