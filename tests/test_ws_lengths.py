"""A text's length tells no hidden card (the audit of leaks of 2026-12-07, helper-60).

The sockets' traffic is encrypted, but its lengths are not.  A card id has one, two
or three digits, so the mover's reply to a draw from the closed pile — its own hand,
the card it drew — was a byte or two shorter or longer by which card it drew, and a
deal's push by which cards were dealt.  Every card id a client is sent under
``cards``, ``card``, ``drawn_this_turn`` or ``finish`` is now three characters wide,
blanks before it (``service.fastjson.to_client``; tests/test_fastjson.py proves on
random messages that two that differ only in their ids have texts of one length).
Here: every text two real clients get over a dealt hand, its draws and discards."""

from __future__ import annotations

import json
import re

from service.startup import Running
from tests.conftest import Api
from tests.test_server import draw_and_discard, seat_two, through_seeds
from tests.wsclient import Client

UNPADDED = re.compile(r'"(?:card|drawn_this_turn|finish)":[0-9]{1,2}[,}\]]|"cards":\[(?:[^\]]*,)?[0-9]{1,2}[,\]]')
PADDED = re.compile(r'"(?:card|drawn_this_turn|finish)":[ 0-9]{3}[,}\]]|"cards":\[[ 0-9]{3}')


async def test_every_card_id_a_client_is_sent_is_three_characters_wide(api: Api, server: Running) -> None:
    table, a, b = await seat_two(api, server)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        await draw_and_discard(table, hand_no, ca, cb, turns=4)
        texts = ca.texts + cb.texts
    assert all(json.loads(t) for t in texts)
    assert [t for t in texts if UNPADDED.search(t)] == []
    # what is checked is there: the deal's hands, the cards drawn and discarded
    assert sum(len(PADDED.findall(t)) for t in texts) >= 2 + 8 + 8
    dealt = [t for t in texts if '"kind":"hand"' in t]  # the deal: each seat its 13 cards, in its event and view
    assert len(dealt) == 2 and all(len(re.findall(r'"cards":\[(?:[ 0-9]{3},){12}[ 0-9]{3}\]', t)) == 2 for t in dealt)
