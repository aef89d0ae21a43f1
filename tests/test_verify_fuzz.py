"""Fuzzing the verifier (issue 9): over 10,000 mutated and generated transcripts,
and raw bytes through the strict reader.  No exception escapes (the verifier runs
with ``debug=True``, so a fault of its own would surface here as a traceback), and
every verdict is either ok — only for an unmutated vector, unless the mutant was
re-signed like a dishonest server would — or a failure naming a check of the table
(or ``read``, for input the reader refuses).

Deterministic (``derandomize``), no example database.  Each test runs twice: with a
tenth of the budget in the fast suite (1,010 inputs), and with the whole budget
(10,100) as a drill (``.ci/run``'s second step).  Most examples use the small vectors.
"""

from __future__ import annotations

import copy
import json
import pickle
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_tamper import forge, load
from verifier import vectors
from verifier.checks import same
from verifier.strictjson import InputError, parse, unwrap_transcript
from verifier.transcript import CHECKS, verify_transcript

KEY = vectors.TEST_SIGNER.public_bytes
SMALL = [
    "v2-transcript-4seat-two-players.json",
    "v2-transcript-headsup-withheld.json",
    "v2-transcript-void-all-withheld.json",
    "v2-transcript-void-seed-lost.json",
    "transcript-void.json",
    "transcript-4seat-two-players.json",
]
LARGER = ["v2-transcript-void-mid-hand.json", "v2-transcript-8seat-seeds-and-leaves.json"]
BASE = {name: load(name) for name in SMALL + LARGER}
TEXT = {name: json.dumps(t) for name, t in BASE.items()}  # json.loads(TEXT[n]) is a fresh copy, fast
EVIDENCE: list[Any] = json.loads((vectors.DIR / "v2-evidence-4seat-two-players-seat1.json").read_text())["evidence"]

MUTATIONS = 6_000
EVIDENCE_MUTATIONS = 600
JUNK = 800
RAW = 2_700
assert MUTATIONS + EVIDENCE_MUTATIONS + JUNK + RAW >= 10_000

# Each test's share of the budget: a tenth in the fast suite, all of it in the drill.
SHARE = pytest.mark.parametrize(
    "share",
    [pytest.param(10, id="tenth"), pytest.param(1, id="full", marks=[pytest.mark.drill, pytest.mark.timeout(900)])],
)


def fuzz_settings(n: int) -> Any:
    return settings(
        max_examples=n,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )


# ----------------------------------------------------------------------------- strategies
KEYS = sorted(
    {
        "protocol", "table_id", "hand_no", "log", "head", "server_seed", "deck", "deck_faces", "result",
        "signature", "type", "header", "sig", "t", "i", "h", "commitments", "commits", "seat", "commit", "psig",
        "reveals", "seed", "status", "events", "kind", "data", "private", "action", "card", "hint", "prev",
        "reason", "rules", "rules_id", "seats", "player_id", "player_key", "dealer", "commit_s", "prev_head",
        "public_key", "commit_ms", "reveal_ms", "winner", "points", "settlement", "pot", "commission", "deltas",
        "point_value", "commission_bps", "turn_seconds", "max_missed_turns", "min_players", "purpose", "body",
        "value", "_about", "transcript", "evidence",
    }
)  # fmt: skip
INTERESTING: list[Any] = [
    0, 1, -1, 2, 3, 4, 6, 8, 13, 20, 40, 80, 130, 10_000, 2**31 - 1, 2**53 - 1, 2**53, -(2**53), 2**64, 10**30,
    "", "0", "1", "00" * 32, "ff" * 64, "AB" * 32, "rummy-pf/v1", "rummy-pf/v2", "header", "commitments",
    "reveals", "deal", "action", "void", "revealed", "no_commit", "withheld", "timeout", "drop", "leave",
    "declare", "discard", "draw_closed", "last_standing", "\ud800", "é", "x" * 600,
    True, False, None, 0.5, float("nan"), float("inf"), -0.0, [], {},
]  # fmt: skip

scalars = st.one_of(
    st.sampled_from(INTERESTING),
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=-5, max_value=200),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.text(alphabet="0123456789abcdef", min_size=0, max_size=130),
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=8,
)


def containers(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = []
    if isinstance(obj, dict | list):
        out.append(path)
        items = obj.items() if isinstance(obj, dict) else enumerate(obj)
        for k, v in items:
            out.extend(containers(v, (*path, k)))
    return out


def at(obj: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        obj = obj[k]
    return obj


CONTAINERS = {name: containers(t) for name, t in BASE.items()}


def box_at(t: Any, path: tuple[Any, ...]) -> Any:
    """The container at ``path`` of the vector, or the top if an earlier edit moved it."""
    try:
        box = at(t, path)
    except (KeyError, IndexError, TypeError):
        return t
    return box if isinstance(box, dict | list) else t


def swap_type(v: Any) -> Any:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return str(v) if abs(v) < 10**100 else "big"
    if isinstance(v, str):
        return len(v) if v.isdigit() is False else int(v[:15] or 0)
    if isinstance(v, list):
        return {str(i): x for i, x in enumerate(v)}
    if isinstance(v, dict):
        return list(v.values())
    return "null" if v is None else [v]


@st.composite
def mutants(draw: st.DrawFn, names: list[str]) -> tuple[str, dict[str, Any], str, list[str]]:
    """A vector with one to three random edits at random places."""
    name = draw(st.sampled_from(names))
    t = json.loads(TEXT[name])
    ops = []
    where = CONTAINERS[name]
    for _ in range(draw(st.integers(1, 3))):
        path = where[draw(st.integers(0, len(where) - 1))]
        box = box_at(t, path)
        op = draw(
            st.sampled_from(["replace", "replace", "delete", "insert", "duplicate", "swap_type", "nudge", "nudge"])
        )
        keys = list(box) if isinstance(box, dict) else list(range(len(box)))
        ops.append(f"{op} at {path}")
        if not keys:
            op = "insert"
        if op == "insert":
            value = draw(json_values)
            if isinstance(box, dict):
                box[draw(st.sampled_from(KEYS) | st.text(max_size=6))] = value
            else:
                box.insert(draw(st.integers(0, len(box))), value)
            continue
        k = keys[draw(st.integers(0, len(keys) - 1))]
        if op == "replace":
            box[k] = draw(json_values)
        elif op == "swap_type":
            box[k] = swap_type(box[k])
        elif op == "nudge":  # a small change that keeps the type, to get past format
            box[k] = nudge(box[k], draw(st.integers(1, 3)))
        elif op == "delete":
            del box[k]
        elif isinstance(box, list):  # duplicate an entry
            box.insert(draw(st.integers(0, len(box))), copy.deepcopy(box[k]))
        else:
            box[draw(st.sampled_from(KEYS))] = copy.deepcopy(box[k])
    resign = draw(st.sampled_from(["no", "no", "yes", "keep_chain"]))
    return name, t, resign, ops


def nudge(v: Any, by: int) -> Any:
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + by if v < 2**53 - by else v - by
    if isinstance(v, str) and v:
        i = by % len(v)
        return v[:i] + ("0" if v[i] != "0" else "1") + v[i + 1 :]
    if isinstance(v, list) and len(v) > 1:
        v = list(v)
        v[0], v[-1] = v[-1], v[0]
        return v
    return v


def try_forge(t: dict[str, Any], rechain: bool = True) -> dict[str, Any] | None:
    """Re-sign a mutant as a dishonest server would, if its shape lets the forger."""
    try:
        return forge(t, rechain=rechain)
    except (KeyError, TypeError, IndexError, AttributeError, ValueError, RecursionError):
        return None


def judge(t: Any, base: Any, seen: Counter[str], *, resigned: bool, evidence: Any = None) -> None:
    # v1 mutants are judged as a user who asked for v1 would see them, so that they reach past `format`
    v1 = isinstance(base, dict) and base.get("protocol") == "rummy-pf/v1"
    report = verify_transcript(t, KEY, evidence, allow_v1=v1, debug=True)  # raises on any fault of the verifier
    json.dumps(report.to_json())
    if report.ok:
        assert resigned or same(t, base), "an unsigned change was accepted"
        seen["ok"] += 1
    else:
        assert report.failure is not None and report.failure.check in CHECKS
        assert not report.failure.message.startswith("internal")
        seen[report.failure.check] += 1


# ----------------------------------------------------------------------------- the tests
@SHARE
def test_mutated_vectors(share: int) -> None:
    n = MUTATIONS // share
    seen: Counter[str] = Counter()

    @fuzz_settings(n)
    @given(st.one_of(*[mutants(SMALL)] * 7, mutants(LARGER)))
    def run(m: tuple[str, dict[str, Any], str, list[str]]) -> None:
        name, t, resign, _ = m
        forged = None
        if resign != "no":
            snapshot = pickle.dumps(t)
            forged = try_forge(t, rechain=resign == "yes")
            if forged is None:  # the forger gave up half-way: judge the mutant as it was
                t = pickle.loads(snapshot)
        judge(forged if forged is not None else t, BASE[name], seen, resigned=forged is not None)
        seen["examples"] += 1

    run()
    assert seen["examples"] >= n
    # The mutants reach well past the first checks: the whole budget as far as `chain`; a
    # tenth of it (the fast suite's share, whose draws land mostly on the top-level fields
    # `format` judges) past `signature` into the replay.
    if share == 1:
        assert {"format", "signature", "chain"} <= set(seen) and len(seen) >= 8, seen
    else:
        assert {"format", "signature", "replay"} <= set(seen) and len(seen) >= 6, seen


@SHARE
def test_mutated_evidence(share: int) -> None:
    n = EVIDENCE_MUTATIONS // share
    seen: Counter[str] = Counter()
    base = BASE["v2-transcript-4seat-two-players.json"]

    @fuzz_settings(n)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        items = copy.deepcopy(EVIDENCE)
        holder = {"evidence": items}
        where = containers(holder)
        path = where[data.draw(st.integers(0, len(where) - 1))]
        box = at(holder, path)
        if isinstance(box, dict) and box:
            k = data.draw(st.sampled_from(sorted(box)))
            box[k] = data.draw(st.one_of(json_values, st.just(swap_type(box[k]))))
        elif isinstance(box, list):
            box.insert(data.draw(st.integers(0, len(box))), data.draw(json_values))
        judge(base, base, seen, resigned=True, evidence=holder["evidence"])
        seen["examples"] += 1

    run()
    assert seen["examples"] >= n and seen["evidence"] > 0


@SHARE
def test_generated_junk(share: int) -> None:
    n = JUNK // share
    seen: Counter[str] = Counter()
    shaped = st.fixed_dictionaries(
        {"protocol": st.sampled_from(["rummy-pf/v1", "rummy-pf/v2"])},
        optional={k: json_values for k in ("table_id", "hand_no", "log", "head", "deck", "result", "signature")},
    )

    @fuzz_settings(n)
    @given(st.one_of(json_values, shaped))
    def run(value: Any) -> None:
        report = verify_transcript(value, KEY, debug=True)
        assert not report.ok and report.failure is not None and report.failure.check == "format"
        json.dumps(report.to_json())
        seen["examples"] += 1

    run()
    assert seen["examples"] >= n


TOKENS = [b"{", b"}", b"[", b"]", b'"', b"\\", b",", b":", b"1e5", b"-0", b"0.5", b"99999999999999999", b"\\ud800",
          b"\xff", b"\xef\xbb\xbf", b"null", b"true", b'"x":1,', b" ", b"\x00", b"[" * 70]  # fmt: skip
RAW_BASE = {name: json.dumps(BASE[name]).encode() for name in SMALL}


@st.composite
def raw_inputs(draw: st.DrawFn) -> tuple[bytes, str | None]:
    if draw(st.integers(0, 3)) == 0:
        return draw(st.binary(max_size=300)), None
    name = draw(st.sampled_from(SMALL))
    data = bytearray(RAW_BASE[name])
    for _ in range(draw(st.integers(1, 3))):
        pos = draw(st.integers(0, len(data)))
        cut = draw(st.integers(0, 3))
        token = draw(st.sampled_from(TOKENS) | st.binary(max_size=3))
        data[pos : pos + cut] = token
    return bytes(data), name


@SHARE
def test_raw_bytes_through_the_strict_reader(share: int) -> None:
    n = RAW // share
    seen: Counter[str] = Counter()

    @fuzz_settings(n)
    @given(raw_inputs())
    def run(raw: tuple[bytes, str | None]) -> None:
        data, name = raw
        try:
            t = unwrap_transcript(parse(data))
        except InputError:
            seen["read"] += 1
        else:
            judge(t, BASE[name] if name else None, seen, resigned=False)
        seen["examples"] += 1

    run()
    assert seen["examples"] >= n and seen["read"] > 0


def test_evidence_holding_a_lone_surrogate_fails_its_signature_and_does_not_crash() -> None:
    """Found by the evidence fuzz (a `.ci/run` drill): an evidence item whose body held a
    lone surrogate (JSON's ``"\\ud800"``) raised UnicodeEncodeError out of the signature
    check.  Such a text has no UTF-8 bytes: nobody signed it, and the check fails."""
    evidence = copy.deepcopy(EVIDENCE)
    n = next(k for k, item in enumerate(evidence) if item["purpose"] == "header")
    evidence[n]["body"]["commit_ms"] = "\ud800"
    base = BASE["v2-transcript-4seat-two-players.json"]
    report = verify_transcript(base, KEY, evidence, debug=True)
    assert not report.ok and report.failure is not None and report.failure.check == "evidence", report.to_json()
    assert f"evidence item {n} (header) is not signed" in report.failure.message, report.failure.message
