"""The room audit (issue 16, item 9): ``rummy-verify audit DIR`` on simulated tables.

The fast version of the proof: a table whose dealer grinds every hand for a
colluding player (tests/audit_sim.py: it claims an honest seat's reveal never
arrived whenever that gives its friend a better deal) is flagged within 80 hands,
and only that player; an honest table of the same size, with its genuine
``withheld`` and ``no_commit`` seats, is not; a dealer that voids its friend's bad
deals instead is flagged within 40 hands, after the reveals (``void_deal``) or in the
reveal window (``void_rate``, beside an honest table).  The full proof (100 honest tables,
and dealers that grind only sometimes) is tests/test_audit_drill.py; the figures are
bench/audit_power.py's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tests.audit_sim import VOID_REASON, Grinder, TableSim, write_table
from verifier.audit import audit, read_folder
from verifier.handfacts import HandFacts, SeatFacts
from verifier.strictjson import InputError

HANDS = 80
VOID_HANDS = 40
# Playing the room's 160 signed hands takes about 15 s of CPU; on a machine shared with
# other work, a generous bound that only a hang exceeds.
SLOW = pytest.mark.timeout(900)
CMD = [sys.executable, "-m", "verifier.cli", "audit"]
# The room is built once per worker that runs one of these tests (some 15 s of CPU):
# with ``-n`` all of them go to one worker (pyproject.toml's ``--dist loadgroup``),
# so it is built once per run, not once per worker.
pytestmark = pytest.mark.xdist_group("audit_room")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CMD, *args], capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def room(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("room")
    grind = TableSim("grind", ["g0", "g1", "g2", "g3"], seed=1, grinder=Grinder("g0"))
    honest = TableSim("honest", ["h0", "h1", "h2", "h3"], seed=2)
    voider = TableSim("voider", ["v0", "v1", "v2", "v3"], seed=3, grinder=Grinder("v0", via="void"))
    window = TableSim("window", ["w0", "w1", "w2", "w3"], seed=4, grinder=Grinder("w0", via="void_in_window"))
    out: dict[str, Any] = {
        "root": root,
        "grind": write_table(grind, HANDS, root / "grind"),
        "honest": write_table(honest, HANDS, root / "honest"),
        "voider": write_table(voider, VOID_HANDS, root / "voider"),
        "window": write_table(window, VOID_HANDS, root / "window"),
        "ground": grind.ground,
        "voided": voider.ground,
        "window_voided": window.ground,
    }
    out["read"] = {name: read_folder(root / name) for name in ("grind", "honest", "voider", "window")}
    return out


def flagged(report: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((t["test"], t.get("player") or t["table"]) for t in report["tests"] if t["flagged"])


@SLOW
def test_a_grinding_table_is_flagged_and_only_its_colluder(room: dict[str, Any]) -> None:
    found = room["read"]["grind"]
    assert len(found.hands) == HANDS and not found.findings  # every hand verified, one chain
    report = audit(found.hands)
    assert flagged(report) == [("deal_advantage", "g0")]
    test = next(t for t in report["tests"] if t["flagged"])
    assert test["p_value"] < 0.001 / report["tarone_k"] and test["observed"] > test["expected"]
    # the seats the dealer left out are in the counts, as withheld
    table = report["tables"][0]
    genuine = sum(s["status"] == "withheld" for t in room["honest"] for s in t["log"][2]["reveals"])
    assert room["ground"] > HANDS // 2 and table["withheld"] >= room["ground"] > genuine
    g0 = next(p for p in report["players"] if p["player"] == "g0")
    assert g0["others_left_out"]["hands"] >= room["ground"]


@SLOW
def test_an_honest_table_of_the_same_size_is_not(room: dict[str, Any]) -> None:
    report = audit(room["read"]["honest"].hands)
    table = report["tables"][0]
    assert 0 < table["left_out"] < 0.05 * table["seat_hands"]  # genuine left-outs, 1–3 %
    assert report["tests_run"] >= 4 and report["flagged"] == 0
    assert all(t["p_value"] > 0.001 for t in report["tests"])


@SLOW
def test_a_table_whose_dealer_voids_its_colluders_bad_deals_is_flagged(room: dict[str, Any]) -> None:
    """The other grinding channel: the dealer voids (after the reveals, D33) every
    hand in which its colluder is dealt the worst hand, so that a new one is dealt."""
    found = room["read"]["voider"]
    assert len(found.hands) == VOID_HANDS and not found.findings
    report = audit(found.hands)
    assert flagged(report) == [("void_deal", "v0")]
    assert report["tables"][0]["voids"] == {VOID_REASON: room["voided"]} and room["voided"] >= 5
    assert report["tables"][0]["left_out"] < 0.05 * report["tables"][0]["seat_hands"]  # nothing else amiss


@SLOW
def test_a_table_whose_dealer_voids_in_the_reveal_window_is_flagged_by_its_void_rate(room: dict[str, Any]) -> None:
    """The void grinder's other moment: it voids its colluder's bad deals in the reveal
    window, every seed it waited for in and before it writes the reveals, so the deck
    is never published and ``void_deal`` has nothing to test.  ``void_rate`` counts
    the voids from the reveal window on (of the hands that reached it) and flags the
    table beside an honest one; counted after the reveals only, as before, it had
    none."""
    found = room["read"]["window"]
    assert len(found.hands) == VOID_HANDS and not found.findings
    report = audit(found.hands + room["read"]["honest"].hands)
    table = next(t for t in report["tables"] if t["table"] == "window")
    assert table["void_after_reveals"] == 0 and table["revealed_hands"] == VOID_HANDS - room["window_voided"]
    assert table["void_from_window"] == room["window_voided"] >= 5 and table["window_hands"] == VOID_HANDS
    assert ("void_rate", "window") in flagged(report)
    assert not [f for f in flagged(report) if f[1].startswith("h") or f[1] == "honest"]
    assert not [t for t in report["tests"] if t["test"] == "void_deal" and t["player"] == "w0"]


@SLOW
def test_the_room_also_flags_the_tables_left_out_rate(room: dict[str, Any]) -> None:
    report = audit(room["read"]["grind"].hands + room["read"]["honest"].hands)
    assert ("left_out_rate", "grind") in flagged(report) and ("deal_advantage", "g0") in flagged(report)
    assert not [f for f in flagged(report) if f[1].startswith("h") or f[1] == "honest"]


@SLOW
def test_cli_exit_codes_and_json(room: dict[str, Any], tmp_path: Path) -> None:
    r = run(str(room["root"] / "grind"), "--json", "--jobs", "2")
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    assert report["ok"] is False and report["counted"] == HANDS and report["failed"] == []
    assert [(t["test"], t["player"]) for t in report["tests"] if t["flagged"]] == [("deal_advantage", "g0")]
    assert {"tables", "players", "tests", "alpha", "threshold", "tarone_k", "tests_run", "tests_counted"} <= set(report)

    r = run(str(room["root"] / "honest"))
    assert r.returncode == 0, r.stderr
    assert "nothing flagged" in r.stdout and "honest" in r.stdout and "deal_advantage" in r.stdout

    # at a tighter level, nothing
    r = run(str(room["root"] / "grind"), "--alpha", "1e-30")
    assert r.returncode == 0 and "nothing flagged" in r.stdout

    assert run(str(room["root"] / "honest"), "--alpha", "2").returncode == 3
    assert run(str(room["root"] / "honest"), "--alpha", "x").returncode == 3
    assert run(str(room["root"] / "honest"), "--jobs", "0").returncode == 3
    assert run(str(tmp_path / "nothing-here")).returncode == 2
    (tmp_path / "empty").mkdir()
    r = run(str(tmp_path / "empty"))
    assert r.returncode == 2 and "no .json files" in r.stderr


@SLOW
def test_a_hand_that_fails_is_listed_apart_and_not_counted(room: dict[str, Any], tmp_path: Path) -> None:
    folder = tmp_path / "honest"
    shutil.copytree(room["root"] / "honest", folder)
    victim = sorted(folder.glob("*.json"))[10]
    t = json.loads(victim.read_text())
    t["result"]["points"][next(iter(t["result"]["points"]))] += 1
    victim.write_text(json.dumps(t))
    r = run(str(folder), "--json")
    assert r.returncode == 1
    report = json.loads(r.stdout)
    assert report["counted"] == HANDS - 1 and report["flagged"] == 0
    assert [f["transcript"] for f in report["failed"]] == [str(victim)]
    assert sum(t["hands"] for t in report["tables"]) == HANDS - 1


# --------------------------------------------------------------------------- the tests, on made-up facts
def seat(
    n: int, player: str, *, status: str = "revealed", deal: int | None = 50, won: bool = False, timeouts: int = 0
) -> SeatFacts:
    return SeatFacts(
        seat=n,
        player_id=player,
        player_key=f"key-{player}",
        status=status,
        dealt=status != "withheld",
        deal_points=deal if status != "withheld" else None,
        turns=3,
        timeouts=timeouts,
        own_moves=0 if timeouts >= 3 else 3 - timeouts,
        clock_drop=timeouts >= 3,
        won=won,
        points=0 if won else 30,
        delta=None,
    )


def hand(no: int, seats: list[SeatFacts], *, table: str = "t", void: str | None = None) -> HandFacts:
    winner = next((s.seat for s in seats if s.won), None)
    return HandFacts(f"{table}/{no}", table, no, tuple(seats), True, True, void, None if void else winner)


def test_deal_advantage_counts_the_seats_beaten_in_left_out_hands() -> None:
    """x is dealt better than both others in 12 hands where z was left out: 24 seats
    beaten of 24, P = 3^-12 / ... (the uniform rank sum on 0…2, twelve times)."""
    hands = [
        hand(i, [seat(0, "x", deal=10), seat(1, "y", deal=60), seat(2, "w", deal=70), seat(3, "z", status="withheld")])
        for i in range(12)
    ]
    hands += [hand(100 + i, [seat(0, "x", deal=80, won=i % 2 == 0), seat(1, "y", deal=20)]) for i in range(20)]
    report = audit(hands)
    x = next(t for t in report["tests"] if t["test"] == "deal_advantage" and t["player"] == "x")
    assert (x["n"], x["observed"], x["expected"]) == (12, 24, 12.0)
    assert x["p_value"] == pytest.approx(3.0**-12) and x["flagged"]
    y = next(t for t in report["tests"] if t["test"] == "deal_advantage" and t["player"] == "y")
    assert y["observed"] == 12 and not y["flagged"]  # y beats w only


def test_win_advantage_compares_hands_with_as_many_seats_in_play() -> None:
    """x wins every three-seat hand where a fourth seat was left out, and a third of
    its three-seat hands otherwise.  A seat whose every turn was the clock's is not
    in play: a four-seat hand with one such seat is a three-seat hand."""
    hands = []
    for i in range(15):  # withheld: three dealt, x wins
        hands.append(hand(i, [seat(0, "x", won=True), seat(1, "y"), seat(2, "w"), seat(3, "z", status="withheld")]))
    for i in range(30):  # four dealt, z absent in all but name (the clock played it): x wins a third
        hands.append(
            hand(
                100 + i,
                [seat(0, "x", won=i % 3 == 0), seat(1, "y", won=i % 3 == 1), seat(2, "w", won=i % 3 == 2)]
                + [seat(3, "z", timeouts=3)],
            )
        )
    report = audit(hands)
    x = next(t for t in report["tests"] if t["test"] == "win_advantage" and t["player"] == "x")
    assert (x["n"], x["observed"]) == (15, 15)
    assert x["expected"] == pytest.approx(15 * 25 / 45, abs=1e-3)
    from math import comb

    assert x["p_value"] == pytest.approx(comb(25, 15) / comb(45, 15))
    assert x["flagged"]


def test_void_deal_flags_voids_of_hands_dealt_against_a_player() -> None:
    hands = [
        hand(i, [seat(0, "x", deal=10), seat(1, "y", deal=90), seat(2, "w", deal=40), seat(3, "v", deal=50)], void="op")
        for i in range(10)
    ]
    report = audit(hands)
    y = next(t for t in report["tests"] if t["test"] == "void_deal" and t["player"] == "y")
    assert (y["n"], y["observed"], y["expected"]) == (10, 30, 15.0)
    assert y["p_value"] == pytest.approx(4.0**-10) and y["flagged"]
    assert report["tables"][0]["voids"] == {"op": 10}


def test_table_rates_against_the_room_need_two_tables() -> None:
    one = [hand(i, [seat(0, "x"), seat(1, "y", status="no_commit")], table="a") for i in range(40)]
    assert not [t for t in audit(one)["tests"] if t["test"].endswith("_rate")]
    other = [hand(i, [seat(0, "u", won=True), seat(1, "v")], table="b") for i in range(400)]
    report = audit(one + other)
    rate = next(t for t in report["tests"] if t["test"] == "left_out_rate" and t["table"] == "a")
    assert rate["observed"] == 40 and rate["flagged"]
    assert not next(t for t in report["tests"] if t["test"] == "left_out_rate" and t["table"] == "b")["flagged"]


def test_tests_that_cannot_reach_the_level_do_not_dilute_it() -> None:
    """Tarone: many players with one left-out hand each (smallest p 1/3) are run but
    not counted: K is 2, for the two players with twelve heads-up left-out hands
    each (smallest p 2^-12), not 152."""
    hands = [
        hand(
            i,
            [
                seat(0, f"p{i}", deal=10),
                seat(1, f"q{i}", deal=20),
                seat(2, f"r{i}", status="withheld"),
                seat(3, f"s{i}", deal=30),
            ],
        )
        for i in range(50)
    ]
    hands += [
        hand(100 + i, [seat(0, "x", deal=1), seat(1, "y", deal=99), seat(2, "z", status="withheld")]) for i in range(12)
    ]
    report = audit(hands, Fraction(1, 1000))
    assert report["tarone_k"] == 2 and report["tests_counted"] == 2 and report["tests_run"] == 152
    assert report["threshold"] == pytest.approx(0.0005)
    assert flagged(report) == [("deal_advantage", "x")]


def test_read_folder_refuses_what_is_not_a_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        read_folder(tmp_path / "absent")


def test_v1_hands_count_only_when_asked(tmp_path: Path) -> None:
    vectors = Path(__file__).resolve().parent.parent / "verifier" / "vectors"
    shutil.copy(vectors / "transcript-4seat-two-players.json", tmp_path / "v1.json")
    r = run(str(tmp_path), "--json")
    report = json.loads(r.stdout)
    assert r.returncode == 1 and report["counted"] == 0 and report["failed"][0]["check"] == "format"
    r = run(str(tmp_path), "--json", "--allow-v1")
    report = json.loads(r.stdout)
    assert r.returncode == 0 and report["counted"] == 1 and report["players"][0]["player_keys"] == [""]
