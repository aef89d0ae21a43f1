"""Bots that play over the real WebSocket with the strategy of verifier.strategy.

A bot is a normal player and a careful client: it registers its own Ed25519 key and
signs every commit, reveal and move with it (rummy-pf/v2); it checks that each hand's
header lists its key before committing; it keeps every ack and signed head the
server sends, the header it was shown and its own ``player`` item (its evidence,
docs/fairness.md §15, written out by :meth:`Bot.write_evidence`); it checks each ack
of its own moves against the move it sent (§15, "On receipt", :mod:`verifier.echo`):
an ack that does not echo it is a dispute (kept in :attr:`Bot.disputes`), and a move
refused under such an ack is made again while it is still ours to make; a signed item
that does not verify under its hand's key (the header's ``public_key``) is not kept —
it proves nothing, and one such item would make the whole evidence file fail — but set
aside in :attr:`Bot.rejected`; two items it keeps that give one record two links are a
fork (:mod:`verifier.forks`), kept in :attr:`Bot.forks` and logged; it learns its seat
and the hand's state from the server's snapshot whenever it (re)connects, so it
commits and reveals
in every hand it is dealt into; it reconnects with backoff when the server goes away;
and when it stops — its hands played, Ctrl-C, an error — it leaves its seat (D34).
A result is pushed only to the sockets open when the hand ends, so after every
reconnect the bot asks ``GET /api/me/hands`` for the hands it was in that ended while
it was away: ``max_hands`` counts hands played, not frames received (a bot that missed
one would otherwise wait for ever at a table its partner had left).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp

from service import fastjson, views
from verifier import strategy
from verifier.chain import commit_move, move_body, player_body, reveal_move
from verifier.checkbase import same
from verifier.echo import Fault, Sent, echo_faults
from verifier.fairness import player_commit
from verifier.forks import Fork, Seen, fork_with, note
from verifier.hand import HandState, Phase, Seat, Status, TableRules, action_to_json, dealer_after
from verifier.record import PROTOCOL
from verifier.schema import WINDOW_MS_MIN
from verifier.signing import Signer, verify

log = logging.getLogger("rummy.bots")
BACKOFF_FIRST = 0.2
BACKOFF_MAX = 5.0
#: A node that stands still keeps the socket open and says nothing.  Heard nothing for
#: HEARTBEAT_SECONDS, a bot pings; no answer in half that, the socket is given up (aiohttp's
#: heartbeat; a live server is never silent that long: it says ``waiting`` while a table
#: is slow).  A handshake not done in CONNECT_SECONDS is given up too.  Either way the bot
#: tries the next node it knows: within 10 s, inside the reach D37 gives it.
HEARTBEAT_SECONDS = 6.0
CONNECT_SECONDS = 8.0
#: A live server says ``waiting`` every 2 s while a message's table is slow, and answers
#: ``busy`` by 30 s (docs/api.md, "Silence"): a message still waiting after this long is
#: one this server will not answer (a stuck table, or a server that keeps the player
#: waiting while another node runs its clock), and the socket is given up like a silent one.
WAITING_SECONDS = 40.0
SHOWN_HANDS = 8  # hands whose views and events we keep, for `bots --verify` to hold against the published hand


class BotStop(Exception):
    """The bot cannot go on (its table is gone, it was refused a seat…)."""


class _Reconnect(Exception):
    """Connect again now: to the node that serves the table, or back home."""


class _JoinLater(Exception):
    """The node could not serve our join yet (the table is between nodes, its database
    is away…): connect to it again after the backoff; it sends us on once it knows."""


@dataclass
class Bot:
    server: str  # http://host:port
    token: str
    table_id: str
    fast: bool = True
    key: Signer = field(default_factory=Signer.generate)
    drops: bool = True  # False: never drop a hopeless hand (hands that last, for tests and drills)
    think: float | None = None  # seconds before each move; None: none when fast, else 0.3-1.5 s
    seat: int | None = None
    player_id: str | None = None  # from the server's hello
    hands_seen: list[dict[str, Any]] = field(default_factory=list)
    frames: list[dict[str, Any]] = field(default_factory=list)  # every frame received (tests inspect them)
    keep_frames: bool = False
    max_hands: int | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)  # acks, heads, headers, player items (§15)
    disputes: list[dict[str, Any]] = field(default_factory=list)  # acks that did not echo our move: {ack, sent, faults}
    echoed: int = 0  # acks checked against the move we sent
    rejected: list[dict[str, Any]] = field(default_factory=list)  # server items that did not verify: not evidence
    forks: list[Fork] = field(default_factory=list)  # two kept items that gave one record two links
    shown: dict[int, dict[int, dict[str, Any]]] = field(default_factory=dict)  # hand_no -> i -> our view then
    heard: dict[int, dict[int, Any]] = field(default_factory=dict)  # hand_no -> i -> the events an update told us
    keep_hands: int | None = None  # keep the evidence of the newest this many hands only (None: of every hand)
    connections: int = 0
    told: collections.Counter[str] = field(default_factory=collections.Counter)  # frames received, by type
    left: bool = False
    _n: int = 0
    _sent: dict[str, Sent] = field(default_factory=dict)  # message id -> our signed move, until it is answered
    _offset_ms: int = 0  # the server's clock minus ours, as its hello told it
    _keys: dict[tuple[Any, Any], bytes] = field(default_factory=dict)  # (table, hand_no) -> its header's key
    _links: Seen = field(default_factory=dict)  # (table, hand, i) -> the link and the kept item naming it
    _evidence_hands: dict[tuple[Any, Any], None] = field(default_factory=dict)  # hands with evidence, oldest first
    _seeds: dict[int, bytes] = field(default_factory=dict)  # hand_no -> our seed
    _headers_kept: set[tuple[str, int]] = field(default_factory=set)  # (table, hand_no) whose header we kept
    _rules: dict[str, Any] | None = None  # the table's rules as we first saw them, when we sat (D38)
    shunned: dict[int, str] = field(default_factory=dict)  # hand_no -> why we sign nothing in it (its header)
    _hand_no: int | None = None
    _first_hand: int | None = None  # the first hand of this table we heard of: catch-up starts there
    _http: aiohttp.ClientSession | None = None
    _caught_up_on: int = 0  # the connection whose missed results we read back
    _results: set[Any] = field(default_factory=set)  # hand_no of every result in hands_seen
    _records: dict[int, str] = field(default_factory=dict)  # record i -> h, of the current hand
    _view: tuple[int, int, dict[str, Any]] | None = None  # (hand_no, i, our view): updates change it
    _acted_on: str | None = None
    _leaving: str | None = None  # the id of our leave message
    _joining: str | None = None  # the id of our join message
    _ws: aiohttp.ClientWebSocketResponse | None = None
    _asking: asyncio.Task[None] | None = None  # a join sent again after a refused move
    _waited: dict[str, float] = field(default_factory=dict)  # message id -> first told `waiting` (monotonic)
    home: str = ""  # the server first given; any node of a cluster sends us on from there
    others: list[str] = field(default_factory=list)  # other nodes, as a node named them (hello, moved, shutdown)

    def __post_init__(self) -> None:
        self.home = self.home or self.server

    # -- life --------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Play until ``max_hands`` hands are seen (then leave), ``stop`` is set, or the
        task is cancelled (then leave too); reconnect whenever the server goes away."""
        backoff = BACKOFF_FIRST
        try:
            async with aiohttp.ClientSession() as session:
                self._http = session
                registered = False
                while not self.left and not (stop is not None and stop.is_set()):
                    try:
                        if not registered:
                            await self._register_key(session)
                            registered = True
                        await self._session(session, stop)
                        backoff = BACKOFF_FIRST
                    except _Reconnect:
                        continue  # at once, where we were sent
                    except _JoinLater:
                        pass
                    except (aiohttp.ClientError, ConnectionError, TimeoutError) as e:
                        log.info("bot %s: connection lost (%s); reconnecting", self.player_id, type(e).__name__)
                        self.server = self._next_server()
                    if self.left or (stop is not None and stop.is_set()):
                        break
                    await asyncio.sleep(backoff + secrets.randbelow(100) / 1000)
                    backoff = min(BACKOFF_MAX, backoff * 2)
        finally:
            if not self.left:
                with contextlib.suppress(Exception):
                    await asyncio.shield(asyncio.wait_for(self._leave_by_rest(), 3))

    @property
    def _played_out(self) -> bool:
        """Our hands are played: we leave, and never sit again (a leave whose answer was
        lost with its socket is sent again after the reconnect, and the snapshot that
        comes meanwhile may show us seatless already)."""
        return self.max_hands is not None and len(self.hands_seen) >= self.max_hands

    def _next_server(self) -> str:
        """After a failed connection: home, then each node a departing node named, in
        turn (a cluster's home node may be the one that went down)."""
        ring = [self.home, *(u for u in self.others if u != self.home)]
        if self.server not in ring:
            return ring[0]
        return ring[(ring.index(self.server) + 1) % len(ring)]

    async def _register_key(self, session: aiohttp.ClientSession) -> None:
        url = f"{self.server.rstrip('/')}/api/me/key"
        async with session.put(url, json={"public_key": self.key.public_bytes.hex()}, headers=self._auth()) as r:
            if r.status != 200:
                raise BotStop(f"could not register the bot's key: {r.status} {await r.text()}")

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    async def _session(self, session: aiohttp.ClientSession, stop: asyncio.Event | None) -> None:
        # The table in the URL: a server of several workers hands the socket to the one
        # that serves it (service.handover).
        url = self.server.rstrip("/") + "/ws?table=" + quote(self.table_id, safe="")
        log.debug("bot %s: connecting to %s", self.player_id, url)
        connecting = session.ws_connect(url, headers=self._auth(), heartbeat=HEARTBEAT_SECONDS)
        async with await asyncio.wait_for(connecting, CONNECT_SECONDS) as ws:
            self._ws = ws
            self.connections += 1
            self._acted_on = None
            self._sent.clear()  # moves of an earlier connection: their answers went with it
            # So did our leave's: ask again (the leave is sent anew once we have heard the
            # server, below) — applied if it never arrived, ``not_seated`` (left) if it did.
            # Kept, its id's answer would never come and no leave would ever be sent again.
            self._leaving = None
            self._waited.clear()
            self._joining = await self.send({"type": "join", "table_id": self.table_id})
            async for msg in ws:
                if msg.type != aiohttp.WSMsgType.TEXT:
                    break
                data = msg.json()
                if self.keep_frames:
                    self.frames.append(data)
                await self.on_message(data)
                if self.left or (stop is not None and stop.is_set()):
                    return
                if self._played_out and self._leaving is None:
                    await self._leave()
            self._ws = None
            silent = ws.exception()
            if isinstance(silent, aiohttp.ServerTimeoutError):
                raise silent  # no answer to the heartbeat: the next node, not this one again

    async def send(self, message: dict[str, Any]) -> str:
        assert self._ws is not None
        self._n += 1
        msg_id = f"m{self._n}"
        # card ids three characters wide, as the server sends them (fastjson.to_client):
        # a declare's finish and kept cards stay hidden until the hand ends (the audit h87)
        await self._ws.send_str(fastjson.to_client({"id": msg_id, **message}))
        return msg_id

    async def send_move(self, message: dict[str, Any], move: dict[str, Any], prev: str) -> str:
        """Send a move signed over ``prev`` (``message["sig"]``), remembered until its
        answer comes, whose ack must echo it (§15, "On receipt")."""
        sent = Sent(
            self.table_id,
            message["hand_no"],
            move["seat"],
            move,
            prev,
            message["sig"],
            int(time.time() * 1000) + self._offset_ms,
        )
        msg_id = await self.send(message)
        self._sent[msg_id] = sent
        return msg_id

    # -- messages ----------------------------------------------------------------------
    async def on_message(self, m: dict[str, Any]) -> None:
        t = m.get("type")
        self.told[str(t)] += 1
        if t in ("reply", "error") and isinstance(m.get("id"), str):
            self._waited.pop(m["id"], None)
        if t == "waiting" and isinstance(m.get("id"), str):
            first = self._waited.setdefault(m["id"], time.monotonic())
            if time.monotonic() - first >= WAITING_SECONDS:
                log.info(
                    "bot %s: message %s still waiting after %.0f s: giving the socket up",
                    self.player_id,
                    m["id"],
                    WAITING_SECONDS,
                )
                if self._ws is not None:  # not a polite close: it would read the server's `waiting`s for ever
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._ws.close(code=4001, message=b"kept waiting"), 1.0)
                raise TimeoutError("the server keeps the message waiting")  # the next node, as after silence
        elif t == "hello":
            self.player_id = m.get("player_id")
            servers = _servers(m)
            if servers:
                self.others = servers  # where to go should this node become unreachable
            with contextlib.suppress(TypeError, ValueError):
                now = datetime.fromisoformat(str(m.get("now"))).timestamp()
                self._offset_ms = int((now - time.time()) * 1000)
        elif t == "reply":
            if isinstance(m.get("update"), dict):  # our move's update comes with its reply
                await self.on_message(m["update"])
            result = m.get("result")
            if isinstance(result, dict):
                await self._on_result(m, result)
        elif t == "error":
            code = m.get("error", {}).get("code")
            if not self._keep_ack(m.get("error", {}).get("ack"), m.get("id"), "refused"):  # a move judged, refused
                # The ack does not echo the move we sent (§15, "On receipt"): whatever
                # the house says was wrong with it is not what we sent.  Make the move
                # again from where the hand stands, while it is still ours to make.
                self._acted_on = None
                self._ask_again()
            if code == "wrong_node" and m.get("error", {}).get("redirect"):
                self.server = str(m["error"]["redirect"])  # the node that serves the table
                raise _Reconnect()
            self.errors.append(m)
            log.info("bot %s got an error: %s", self.player_id, m.get("error"))
            if m.get("id") == self._joining:
                if code == "no_such_table":
                    raise BotStop(f"no table {self.table_id}")
                if code == "table_closed":  # never served again: asking again would loop
                    raise BotStop(f"table {self.table_id} is closed")
                raise _JoinLater()  # without a join nothing would ever come: ask again
            if m.get("id") == self._leaving:
                if code == "not_seated":
                    self.left = True
                else:  # signature_required, stale_head…: sign again over what we see next
                    self._leaving = None
            elif code == "unavailable":
                # The table could not store our move (its database away, D32): nothing
                # was changed.  Ask again where the hand stands after a backoff, and act
                # on that — the same move if it is still ours to make.
                self._acted_on = None
                self._ask_again()
        elif t == "shutdown":
            servers = _servers(m)
            if servers is not None:
                self.others = servers
            log.debug("bot %s: shutdown (other nodes: %s)", self.player_id, self.others)
            # This node goes down and has handed its tables over: ask another node
            # where the table is served now, else home.
            self.server = self.others[0] if self.others else self.home
        elif t == "moved":
            servers = _servers(m)
            if servers:
                # another node knows where the table is now (this one may have lost its
                # database, and could not tell us)
                self.others = servers
                self.server = servers[0]
            else:
                self.server = self.home  # ask again where the table is served
            log.debug("bot %s: moved (asking %s)", self.player_id, self.server)
        elif t == "resumed" and isinstance(m.get("snapshot"), dict):
            log.debug("bot %s: resumed", self.player_id)
            self._acted_on = None  # a move refused while the table was paused is ours to make again
            await self._from_snapshot(m["snapshot"])
        elif t == "table":
            self._seat_from(m.get("seats", {}))
        elif t == "hand":
            if m.get("phase") == "commit" and isinstance(m.get("record"), dict):
                self._learn_key(m["record"])
            self._note(m)
            await self._on_hand(m)
        elif t == "update":
            self._note(m)
            self._heard(m)
            await self._maybe_act(self._changed(m), m.get("hand_no"))
        elif t == "result":
            self._heard_of(m.get("hand_no"))
            self._keep_result(m)
            self._records = {}
            self._view = None

    def _ask_again(self) -> None:
        if self._asking is not None and not self._asking.done():
            return

        async def later() -> None:
            await asyncio.sleep(BACKOFF_FIRST + secrets.randbelow(300) / 1000)
            if self._ws is not None and not self._ws.closed:
                with contextlib.suppress(ConnectionError, RuntimeError):
                    self._joining = await self.send({"type": "join", "table_id": self.table_id})

        self._asking = asyncio.create_task(later())

    async def _on_result(self, m: dict[str, Any], result: dict[str, Any]) -> None:
        if "rules" in result and "seats" in result:  # the snapshot answering our join
            await self._from_snapshot(result)
            return
        if "seat" in result and "table_id" in result:
            self.seat = result["seat"]
        self._keep_ack(result.get("ack"), m.get("id"), "accepted")  # a commit, reveal, action or leave
        if "left" in result and m.get("id") == self._leaving:
            self.left = True

    def _keep_ack(self, ack: Any, msg_id: Any, outcome: str) -> bool:
        """Keep the server's signed ack of one of our moves, accepted or refused (§15),
        and check it against the move we sent: False when it does not echo it (a
        dispute, logged and kept)."""
        sent = self._sent.pop(msg_id, None) if isinstance(msg_id, str) else None
        if not (isinstance(ack, dict) and ack.get("purpose") == "ack"):
            return True
        if not self._keep(ack):  # not the server's signature: the refusal (or acceptance) is not shown
            if sent is None:
                return True
            self.disputes.append({"ack": ack, "sent": sent, "faults": [Fault("sig", "the server's", ack.get("sig"))]})
            return False
        body = ack.get("body")
        if sent is None or not isinstance(body, dict):
            return True
        self.echoed += 1
        faults = echo_faults(body, sent, outcome)
        if not faults:
            return True
        log.error("bot %s: the ack of our move does not echo it: %s", self.player_id, "; ".join(map(str, faults)))
        self.disputes.append({"ack": ack, "sent": sent, "faults": faults})
        return False

    def _changed(self, m: dict[str, Any]) -> dict[str, Any] | None:
        """Our view after an update: its whole view (the deal), or the view we had with
        the update's changes; after a gap (an update missed) we ask for a snapshot."""
        view: dict[str, Any] | None
        if "view" in m:
            view = m["view"]
        else:
            had = self._view
            if had is not None and had[0] == m.get("hand_no") and had[1] >= m.get("i", 0):
                return had[2]  # a snapshot already held this record
            if had is None or had[0] != m.get("hand_no") or had[1] != m.get("i", 0) - 1:
                self._view = None
                self._ask_again()
                return None
            view = views.apply(had[2], m.get("changes") or {})
        self._view = None if view is None else (int(m["hand_no"]), int(m["i"]), view)
        self._saw(self._view)
        return view

    def _saw(self, view: tuple[int, int, dict[str, Any]] | None) -> None:
        """Keep the view we were shown at a record (of the last SHOWN_HANDS hands): what
        ``bots --verify`` holds against the published hand (:mod:`service.botverify`)."""
        if view is not None:
            _keep_per_hand(self.shown, *view)

    def _heard(self, m: dict[str, Any]) -> None:
        """Keep the events an update told us at its record (of the last SHOWN_HANDS
        hands), for ``bots --verify`` to hold against the published record's; kept as
        sent: an update without its events is a difference too."""
        hand_no, i = m.get("hand_no"), m.get("i")
        if isinstance(hand_no, int) and isinstance(i, int):
            _keep_per_hand(self.heard, hand_no, i, m.get("events"))

    def _note(self, m: dict[str, Any]) -> None:
        """Keep the signed head of every record we are sent (an update carries its
        signature; the item is its table, hand, record and link with it)."""
        head = m.get("head")
        if head is None and isinstance(m.get("head_sig"), str):
            body = {"table_id": m.get("table_id"), "hand_no": m.get("hand_no"), "i": m.get("i"), "h": m.get("h")}
            head = {"purpose": "head", "body": body, "sig": m["head_sig"]}
        if isinstance(head, dict) and head.get("purpose") == "head":
            self._keep(head)
            body = head["body"]
            if body.get("hand_no") != self._hand_no:
                self._hand_no, self._records = body.get("hand_no"), {}
                self._heard_of(self._hand_no)
            self._records[int(body["i"])] = str(body["h"])

    def _seat_from(self, seats: dict[str, str]) -> None:
        mine = [int(s) for s, p in seats.items() if p == self.player_id]
        self.seat = mine[0] if mine else None

    async def _from_snapshot(self, snap: dict[str, Any]) -> None:
        """Where we stand, after a (re)connect or a table's reload: our seat, and what
        the hand in progress still needs from us."""
        self._seat_from(snap.get("seats", {}))
        if self._rules is None and isinstance(snap.get("rules"), dict):
            self._rules = snap["rules"]
        hand = snap.get("hand")
        await self._catch_up(hand["hand_no"] if isinstance(hand, dict) else None)
        if self.seat is None and self._leaving is None and not self.left and not self._played_out:
            await self.send({"type": "sit", "table_id": self.table_id})
        if not isinstance(hand, dict):
            self._view = None
            return
        self._hand_no = hand["hand_no"]
        self._heard_of(self._hand_no)
        self._learn_key(hand["header"])
        self._records = {0: hand["header"]["h"]}
        if hand.get("commitments"):
            self._records[1] = hand["commitments"]["h"]
        self._records[int(hand["i"])] = str(hand["h"])
        view = hand.get("view")
        self._view = None if view is None else (int(hand["hand_no"]), int(hand["i"]), view)
        self._saw(self._view)
        if hand["phase"] == "commit" and hand.get("committed") is False:
            await self._commit(hand["hand_no"], hand["header"])
        elif hand["phase"] == "reveal" and hand.get("committed") and hand.get("revealed") is False:
            await self._reveal(hand["hand_no"], hand["commitments"])
        elif hand["phase"] == "play":
            await self._maybe_act(hand.get("view"), hand["hand_no"])

    def _heard_of(self, hand_no: Any) -> None:
        if self._first_hand is None and isinstance(hand_no, int):
            self._first_hand = hand_no

    def _keep_result(self, m: dict[str, Any]) -> None:
        """One result a hand: a frame pushed after we caught up with its hand is not
        counted twice."""
        if m.get("hand_no") not in self._results:
            self._results.add(m.get("hand_no"))
            self.hands_seen.append(m)

    async def _catch_up(self, current: int | None) -> None:
        """The results of the hands of this table we were in, from the first we heard
        of, that ended while we were away (their result frame went to the sockets open
        then): from our hand history and each hand's published transcript, in the
        result frame's own shape."""
        if self._first_hand is None or self._http is None or self._caught_up_on == self.connections:
            return  # our first connection, or one we already caught up on: nothing was missed
        self._caught_up_on = self.connections
        base = self.server.rstrip("/")
        async with self._http.get(f"{base}/api/me/hands", headers=self._auth()) as r:
            if r.status != 200:
                log.info("bot %s: no hand history (%s); results missed stay missed", self.player_id, r.status)
                return
            history = (await r.json())["hands"]
        missed = sorted(
            (
                h
                for h in history
                if h["table_id"] == self.table_id
                and h["hand_no"] >= self._first_hand
                and h["hand_no"] != current
                and h["status"] in ("ended", "void")
                and h["hand_no"] not in self._results
            ),
            key=lambda h: int(h["hand_no"]),
        )
        for h in missed:
            async with self._http.get(base + h["transcript"]) as r:
                t = await r.json() if r.status == 200 else None  # 410: voided before its header
            last = t["log"][-1] if t else {"type": "void", "reason": None}
            log.info("bot %s: hand %s ended while we were away", self.player_id, h["hand_no"])
            self._keep_result(
                {
                    "type": "result",
                    "table_id": self.table_id,
                    "hand_no": h["hand_no"],
                    "hand_id": h["hand_id"],
                    "void": last["type"] == "void",
                    "void_reason": last.get("reason"),
                    "result": t["result"] if t else None,
                    "server_seed": t["server_seed"] if t else None,
                    "head": t["head"] if t else None,
                    "transcript": h["transcript"],
                    "caught_up": True,  # not pushed to us: read back after a reconnect
                }
            )

    async def _on_hand(self, m: dict[str, Any]) -> None:
        if m.get("phase") == "commit":
            await self._commit(m["hand_no"], m["record"])
        elif m.get("phase") == "reveal":
            await self._reveal(m["hand_no"], m["record"])

    async def _commit(self, hand_no: int, header_record: dict[str, Any]) -> None:
        header = header_record["header"]
        entry = next((s for s in header["seats"] if s["player_id"] == self.player_id), None)
        if entry is None:
            return  # we sit this hand out
        self._keep_header(header_record, entry["seat"])
        wrong = self._wrong_header(hand_no, header, entry)
        if wrong is not None:
            # The signed header we keep (and our player item) are the proof (§15.3, §15.4, D38).
            log.error("bot %s: hand %d's header %s; signing nothing in it", self.player_id, hand_no, wrong)
            self.shunned[hand_no] = wrong
            return
        self.seat = entry["seat"]
        seed = self._seeds.setdefault(hand_no, secrets.token_bytes(32))
        commit = player_commit(entry["seat"], seed)
        move = commit_move(entry["seat"], commit)
        sig = self._sign(hand_no, header_record["h"], move)
        await self.send_move(
            {"type": "commit", "table_id": self.table_id, "hand_no": hand_no, "commit": commit.hex(), "sig": sig},
            move,
            header_record["h"],
        )

    def _wrong_header(self, hand_no: int, header: dict[str, Any], entry: dict[str, Any]) -> str | None:
        """Why we must not commit to this header, or None: it lists another key for our
        seat (§15.4), names another table or hand than the one being dealt, gives
        other rules than the table we sat at (RULES.md D38), a seed window shorter
        than the protocol allows (D21), or a dealer the button did not move to (D3)."""
        if entry.get("player_key") != self.key.public_bytes.hex():
            return "lists another key for us"
        if (header.get("table_id"), header.get("hand_no")) != (self.table_id, hand_no):
            return f"is for table {header.get('table_id')} hand {header.get('hand_no')}"
        rules = self._table_rules(hand_no)
        if rules is not None and not same(header.get("rules"), rules):
            return f"gives other rules than the table's: {header.get('rules')} for {rules}"
        for name in ("commit_ms", "reveal_ms"):  # D21: a shorter window closes on our seed
            if not isinstance(header.get(name), int) or header[name] < WINDOW_MS_MIN:
                return f"gives a seed window {name} of {header.get(name)}, below the protocol's {WINDOW_MS_MIN} (D21)"
        return self._wrong_dealer(hand_no, header)

    def _wrong_dealer(self, hand_no: int, header: dict[str, Any]) -> str | None:
        """The button moves to the next seat each hand (RULES.md D3): hand 1 is dealt by
        its lowest seat (§14 `chain`); if we kept the header of the hand before, this one
        is dealt by the next of its seats after that hand's dealer; why it is not, or
        None."""
        if hand_no == 1:
            lowest = min(e["seat"] for e in header["seats"])
            if header.get("dealer") != lowest:
                return f"is dealt by seat {header.get('dealer')}, not seat {lowest}, a table's first hand's (D3)"
            return None
        before = next((b for b in self._kept_headers() if b["hand_no"] == hand_no - 1), None)
        if before is None or type(before.get("dealer")) is not int:
            return None
        want = dealer_after(sorted(e["seat"] for e in header["seats"]), before["dealer"])
        if header.get("dealer") != want:
            last = f"hand {hand_no - 1}'s dealer"
            return f"is dealt by seat {header.get('dealer')}, not seat {want}, the next after {last} (D3)"
        return None

    def _table_rules(self, hand_no: int) -> Any:
        """The table's rules, which never change (D38): as the server signed them in the
        header of the table's earliest other hand that we kept (signed word beats a
        snapshot; the earliest, as a header we refused is kept too), else as the table
        showed them when we first joined; None if we know neither."""
        kept = [b for b in self._kept_headers() if b["hand_no"] != hand_no]
        return min(kept, key=lambda b: b["hand_no"]).get("rules") if kept else self._rules

    def _kept_headers(self) -> list[dict[str, Any]]:
        """The bodies of the signed headers of this table's hands that we kept (§15)."""
        return [
            e["body"]
            for e in self.evidence
            if e.get("purpose") == "header"
            and isinstance(e.get("body"), dict)
            and e["body"].get("table_id") == self.table_id
            and isinstance(e["body"].get("hand_no"), int)
        ]

    async def _reveal(self, hand_no: int, commitments_record: dict[str, Any]) -> None:
        commits = {c["seat"]: c["commit"] for c in commitments_record["commitments"]["commits"]}
        seed = self._seeds.get(hand_no)
        if self.seat is None or not commits.get(self.seat) or seed is None:
            return
        if commits[self.seat] != player_commit(self.seat, seed).hex():
            return
        move = reveal_move(self.seat, seed)
        sig = self._sign(hand_no, commitments_record["h"], move)
        await self.send_move(
            {"type": "reveal", "table_id": self.table_id, "hand_no": hand_no, "seed": seed.hex(), "sig": sig},
            move,
            commitments_record["h"],
        )

    def _keep_header(self, header_record: dict[str, Any], seat: int) -> None:
        """The signed header as we were shown it, and our ``player`` item: the key we
        sign this hand's seat with (§15), once per hand."""
        header = header_record["header"]
        if (header["table_id"], header["hand_no"]) in self._headers_kept:
            return
        self._headers_kept.add((header["table_id"], header["hand_no"]))
        self._learn_key(header_record)
        self._keep({"purpose": "header", "body": header, "sig": header_record["sig"]})
        body = player_body(header["table_id"], header["hand_no"], seat, self.key.public_bytes)
        self._add_evidence({"purpose": "player", "body": body, "sig": self.key.sign("player", body, PROTOCOL)})

    def _learn_key(self, header_record: dict[str, Any]) -> None:
        """The key a hand's server items are signed with: its header's (§15.2)."""
        header = header_record.get("header")
        if isinstance(header, dict):
            with contextlib.suppress(TypeError, ValueError):
                key = bytes.fromhex(header["public_key"])
                self._keys.setdefault((header.get("table_id"), header.get("hand_no")), key)

    def _keep(self, item: dict[str, Any]) -> bool:
        """Keep a server-signed item as evidence if it verifies under its hand's key
        (or if we do not know that key yet); otherwise set it aside and say so."""
        body = item.get("body")
        key = self._keys.get((body.get("table_id"), body.get("hand_no"))) if isinstance(body, dict) else None
        if key is not None and not verify(key, str(item.get("purpose")), body, str(item.get("sig")), PROTOCOL):
            log.error(
                "bot %s: a %s from the server does not verify: not kept as evidence",
                self.player_id,
                item.get("purpose"),
            )
            self.rejected.append(item)
            return False
        if key is not None:  # only an item that verified can be a word on a record
            fork = fork_with(self._links, item)
            if fork is not None:
                log.error("bot %s: a fork: %s", self.player_id, fork)
                self.forks.append(fork)
            note(self._links, item)
        self._add_evidence(item)
        return True

    def _add_evidence(self, item: dict[str, Any]) -> None:
        """Keep ``item``; with ``keep_hands``, a hand's items (and what we know of its
        links and key) go once that many newer hands have evidence, so a bot left at a
        table for days holds a bounded amount (``bots`` without ``--evidence``, whose
        ``--verify`` checks each hand as it ends)."""
        self.evidence.append(item)
        if self.keep_hands is None:
            return
        body = item["body"]
        hand = (body.get("table_id"), body.get("hand_no"))
        if hand in self._evidence_hands:
            return
        self._evidence_hands[hand] = None
        while len(self._evidence_hands) > self.keep_hands:
            old = next(iter(self._evidence_hands))
            del self._evidence_hands[old]
            self.evidence = [e for e in self.evidence if (e["body"].get("table_id"), e["body"].get("hand_no")) != old]
            self._links = {k: v for k, v in self._links.items() if (k[0], k[1]) != old}
            self._keys.pop(old, None)

    def evidence_of(self, table_id: str, hand_no: int) -> list[dict[str, Any]]:
        """The items we kept for one hand."""
        return [
            e for e in self.evidence if (e["body"].get("table_id"), e["body"].get("hand_no")) == (table_id, hand_no)
        ]

    def write_evidence(self, path: str | os.PathLike[str]) -> int:
        """Our evidence file (docs/fairness.md §15: a JSON array of signed items, for
        ``rummy-verify TRANSCRIPT --receipts FILE``); returns the number of items."""
        Path(path).write_text(json.dumps(self.evidence, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return len(self.evidence)

    def _sign(self, hand_no: int, prev: str, move: dict[str, Any]) -> str:
        return self.key.sign("move", move_body(self.table_id, hand_no, prev, move), PROTOCOL)

    @property
    def _head(self) -> str | None:
        return self._records[max(self._records)] if self._records else None

    async def _maybe_act(self, view: dict[str, Any] | None, hand_no: int | None) -> None:
        if not view or view.get("phase") == "ended" or "me" not in view or hand_no is None:
            return
        me = view["me"]
        head = self._head
        if hand_no in self.shunned:
            return  # its header is not one we sign under (_wrong_header)
        if view["turn"] != me["seat"] or me["status"] != "playing" or head is None or self._acted_on == head:
            return
        self._acted_on = head
        log.debug("bot %s: acting on %s", self.player_id, head[:8])
        if self.think is not None:
            await asyncio.sleep(self.think)
        elif not self.fast:
            await asyncio.sleep(0.3 + secrets.randbelow(1200) / 1000)  # think time
        action = choose_from_view(view, allow_drop=self.drops)
        move = {**action, "seat": me["seat"]}
        await self.send_move(
            {
                "type": "action",
                "table_id": self.table_id,
                "hand_no": hand_no,
                "action": action,
                "prev": head,
                "sig": self._sign(hand_no, head, move),
            },
            move,
            head,
        )

    # -- leaving -----------------------------------------------------------------------
    def _leave_fields(self) -> dict[str, Any]:
        """A leave during a hand is a move, signed over the newest record we know."""
        head = self._head
        if self._hand_no is None or head is None or self.seat is None:
            return {}
        move = {"kind": "leave", "seat": self.seat}
        return {"hand_no": self._hand_no, "prev": head, "sig": self._sign(self._hand_no, head, move)}

    async def _leave(self) -> None:
        fields = self._leave_fields()
        message = {"type": "leave", "table_id": self.table_id, **fields}
        if fields and self.seat is not None:
            move = {"kind": "leave", "seat": self.seat}
            self._leaving = await self.send_move(message, move, fields["prev"])
        else:
            self._leaving = await self.send(message)

    async def _leave_by_rest(self) -> None:
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"{self.server.rstrip('/')}/api/tables/{self.table_id}/leave",
                json=self._leave_fields(),
                headers=self._auth(),
            ) as r,
        ):
            if r.status in (200, 409):  # 409 not_seated: nothing to leave
                self.left = True


def _servers(m: dict[str, Any]) -> list[str] | None:
    """The other nodes a frame names (``hello``, ``moved``, ``shutdown``), or None."""
    servers = m.get("servers")
    if isinstance(servers, list) and all(isinstance(u, str) for u in servers):
        return servers
    return None


def state_from_view(view: dict[str, Any]) -> HandState:
    """A HandState with only what the view shows (own cards, the open pile), for the
    strategy; the hidden parts stay empty."""
    rules = TableRules.from_json(view["rules"])
    me = view["me"]
    seats = tuple(
        Seat(s["seat"], s["player_id"], Status(s["status"]), tuple(me["cards"]), drawn_any=me["drawn_any"])
        if s["seat"] == me["seat"]
        else Seat(s["seat"], s["player_id"], Status(s["status"]))
        for s in view["seats"]
    )
    return HandState(
        rules=rules,
        seats=seats,
        dealer=view["dealer"],
        wild_indicator=view["wild_indicator"],
        closed=(),
        open=tuple(view["open"]),
        turn=view["turn"],
        phase=Phase(view["phase"]),
        turn_no=view["turn_no"],
    )


def _keep_per_hand(kept: dict[int, dict[int, Any]], hand_no: int, i: int, value: Any) -> None:
    """``kept[hand_no][i] = value``, keeping the newest SHOWN_HANDS hands only."""
    if hand_no not in kept:
        kept[hand_no] = {}
        while len(kept) > SHOWN_HANDS:
            del kept[min(kept)]
    kept[hand_no][i] = value


def choose_from_view(view: dict[str, Any], *, allow_drop: bool = True) -> dict[str, Any]:
    """The strategy's move (verifier.strategy.choose), as an action message."""
    action = action_to_json(strategy.choose(state_from_view(view), view["me"]["seat"], allow_drop=allow_drop))
    del action["seat"]  # the server knows whose seat it is
    return action


async def create_bots(
    session: aiohttp.ClientSession,
    server: str,
    operator_token: str,
    table_id: str,
    count: int,
    *,
    deposit: int,
    fast: bool,
    hands: int | None,
) -> list[Bot]:
    """``count`` new bot players, each with a deposit, ready to join ``table_id``."""
    bots = []
    for n in range(count):
        async with session.post(
            f"{server.rstrip('/')}/api/players",
            json={"name": f"bot-{n + 1}", "deposit": deposit, "bot": True},
            headers={"Authorization": f"Bearer {operator_token}"},
        ) as r:
            body = await r.json()
            if r.status != 201:
                raise RuntimeError(f"could not create a bot player: {body}")
        bots.append(Bot(server, body["token"], table_id, fast=fast, max_hands=hands))
    return bots


async def play(bots: list[Bot], timeout: float | None = None) -> None:
    """Run the bots until each has played its hands (or forever), then stop them."""
    tasks = [asyncio.create_task(b.run()) for b in bots]
    try:
        done, pending = await asyncio.wait(tasks, timeout=timeout)
        for t in done:
            t.result()  # a bot's error is the caller's
        if pending:
            raise TimeoutError(f"{len(pending)} bots had not finished after {timeout} s")
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def run_bots(
    server: str, operator_token: str, table_id: str, count: int, *, fast: bool, deposit: int, hands: int | None = None
) -> list[Bot]:
    """Create ``count`` bot players (with a deposit each), seat them and play."""
    async with aiohttp.ClientSession() as session:
        bots = await create_bots(
            session, server, operator_token, table_id, count, deposit=deposit, fast=fast, hands=hands
        )
    await play(bots)
    return bots
