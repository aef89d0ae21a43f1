"""The browser's own count agrees with the Python count (issue 10, item 4): Python
generates a few hundred hands — random ones from two- and three-deck packs, and
near-complete ones built from runs and sets with wild cards — both implementations
score them, and the test compares the points and the valid-declare verdicts, and
checks every arrangement the browser shows with the Python group validator."""

from __future__ import annotations

import json
import random
from pathlib import Path

from playwright.async_api import Browser

from bench.score import near_complete_hand, random_hand
from tests.browser import new_page, serve_directory
from verifier.arrange import best_arrangement
from verifier.cards import JOKER, Card, card_value
from verifier.groups import classify

WEB = Path(__file__).resolve().parent.parent / "service" / "web"


def hands(n: int) -> list[tuple[list[Card], Card]]:
    rng = random.Random(20261130)  # the test's own generator; game code never uses one
    out = []
    for k in range(n):
        cards, wild_rank = (random_hand if k % 2 else near_complete_hand)(rng)
        if wild_rank is None:
            indicator = JOKER
        else:
            indicator = Card(rng.randrange(4), wild_rank)
        out.append((cards, indicator))
    return out


async def test_the_javascript_count_agrees_with_the_python_count(browser: Browser) -> None:
    cases = hands(300)
    async with serve_directory(WEB) as base, new_page(browser) as page:
        await page.goto(base + "/verify.html")
        await page.wait_for_function("() => !!(window.RummyPF && window.RummyPF.score)")
        faces = [[str(c) for c in cards] for cards, _ in cases]
        wilds = [str(w) for _, w in cases]
        got = await page.evaluate("([hands, wilds]) => hands.map((h, i) => RummyPF.score(h, wilds[i]))", [faces, wilds])
    disagreements = []
    for (cards, indicator), js in zip(cases, got, strict=True):
        wild_rank = None if indicator.is_joker else indicator.rank
        py = best_arrangement(cards, wild_rank)
        if (js["points"], js["valid_declare"]) != (py.points, py.valid_declare):
            disagreements.append(
                {"hand": [str(c) for c in cards], "wild": str(indicator), "js": js, "python": py.points}
            )
            continue
        # The browser's arrangement is a real one: valid groups, the loose cards' values sum to the points.
        shown = [c for g in js["groups"] for c in g] + list(js["loose"])
        assert sorted(shown) == sorted(str(c) for c in cards), js
        for group in js["groups"]:
            assert classify([Card.parse(f) for f in group], wild_rank) is not None, (group, str(indicator))
        assert sum(card_value(Card.parse(f), wild_rank) for f in js["loose"]) == js["points"]
    assert not disagreements, json.dumps(disagreements[:5], indent=1)
    assert sum(1 for (c, w) in cases if best_arrangement(c, None if w.is_joker else w.rank).valid_declare) > 20
