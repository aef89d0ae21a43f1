"""``rummy-verify score`` (issue 2, item 6)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from verifier.cards import Card, card_value, wild_rank_of

CMD = [sys.executable, "-m", "verifier.cli"]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CMD, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False)


def test_score_one_hand() -> None:
    r = run("score", "--wild", "7H", "AS", "2S", "3S", "4H", "5H", "6H", "9D", "9C", "9S", "KC", "KD", "JK", "2C")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out) == {"points", "valid_declare", "groups", "loose"}
    assert out["points"] == 2 and out["valid_declare"] is False and out["loose"] == ["2C"]
    wild = wild_rank_of(Card.parse("7H"))
    assert out["points"] == sum(card_value(Card.parse(c), wild) for c in out["loose"])
    assert sorted(c for g in out["groups"] for c in g) + out["loose"] != []


def test_score_accepts_10_and_joker_indicator() -> None:
    r = run("score", "--wild", "JK", "AS", "2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S", "10S", "JS", "QS", "KS")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["valid_declare"] is True and out["points"] == 0 and out["loose"] == []


def test_score_stream_answers_in_order() -> None:
    lines = [
        {"wild": "7H", "hand": "AS 2S 3S 4H 5H 6H 9D 9C 9S KC KD JK 2C".split()},
        {"wild": "2C", "hand": "AS AS AH AH KS KS KH KH QD QD QC QC JD".split()},
        {"wild": "4C", "hand": "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS 5D".split()},
    ]
    r = run("score", stdin="".join(json.dumps(x) + "\n" for x in lines))
    assert r.returncode == 0, r.stderr
    answers = [json.loads(x) for x in r.stdout.splitlines()]
    assert [a["points"] for a in answers] == [2, 130, 5]


def test_bad_card_exits_2_naming_it() -> None:
    r = run("score", "--wild", "7H", "AS", "2S", "3S", "4H", "5H", "6H", "9D", "9C", "9S", "KC", "KD", "XX", "2C")
    assert r.returncode == 2 and "XX" in r.stderr and r.stdout == ""


def test_wrong_number_of_cards_exits_2() -> None:
    r = run("score", "--wild", "7H", "AS", "2S")
    assert r.returncode == 2 and "13 cards" in r.stderr


def test_bad_stream_line_exits_2_naming_the_line() -> None:
    good = json.dumps({"wild": "7H", "hand": "AS 2S 3S 4H 5H 6H 9D 9C 9S KC KD JK 2C".split()})
    r = run("score", stdin=good + "\n{not json\n")
    assert r.returncode == 2 and "line 2" in r.stderr
    assert len(r.stdout.splitlines()) == 1  # the good line was answered first


def test_console_script_is_installed() -> None:
    # Beside this interpreter, where pip puts it (PATH may not name the environment).
    beside = Path(sys.executable).with_name("rummy-verify")
    exe = str(beside) if beside.exists() else shutil.which("rummy-verify")
    assert exe is not None, "pip install . provides rummy-verify"
    r = subprocess.run(
        [exe, "score", "--wild", "JK", *"AS AS AH AH KS KS KH KH QD QD QC QC JD".split()],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0 and json.loads(r.stdout)["points"] == 130
