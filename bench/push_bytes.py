"""What the clients receive per action, and what other encodings of the same messages
would weigh (issue 20, item 3: at most 1.5 KB an action at six seats).

    python bench/push_bytes.py                 # 4 six-seat tables, one 10 s window
    python bench/push_bytes.py --tables 8 --seconds 20 --sample 3

One server runs in this process with the load client of ``bench/action_profile.py``
(every seat a real player with its own key and socket, playing as fast as the server
acknowledges).  During one window every text the server sends to a client is kept
(``service.telling.Connection.push_text`` is the one door every frame goes through),
and the server's count of stored actions gives the divisor.  Each message is then
weighed four ways, the same messages every time:

- ``today``: the JSON text as sent (what ``bench/load.py`` reports as KB/action);
- ``lean JSON``: the same JSON with what a client can rebuild itself left out, and
  nothing a player keeps as evidence weakened: the faces (a card's face follows from
  its id, docs/fairness.md §3), the mover's reply without the copies of what its signed
  acknowledgement already holds (``result.i``/``h``, and in its update ``table_id``,
  ``hand_no``, ``i``, ``h`` and the head's signature: the ack of an accepted action is
  the signed head of its record, §15), the deadline as integer milliseconds, and every
  hash, key and signature as base64url instead of hex;
- ``binary``: the lean messages as MessagePack (sizes computed exactly, hashes, keys
  and signatures as raw bytes, keys still named): every signature kept;
- ``binary, keys and words as numbers``: the same with every field name and every
  protocol word (``update``, ``discard``, ``playing``…) a one-byte number from a table
  the protocol would fix: about the least a self-describing encoding of these
  messages can weigh;
- ``lean JSON, signatures at the mover only``: the lean JSON without the head's
  signature in the other seats' updates — weaker evidence (a seat would keep no
  signed head of a record it did not act on), shown only to size what that saves.

The figures are bytes of payload, before WebSocket framing (2–4 bytes a frame from
the server), like bench/load.py's.  Nothing here changes the protocol: it measures
what a change of it would buy.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the tree of PYTHONPATH wins, else this one
    here = str(Path(__file__).resolve().parent.parent)
    if here not in sys.path:
        sys.path.append(here)

from bench.action_profile import Client, actions_stored, bench_server
from bench.loadclient import frame_kind
from service import telling

HEX = re.compile(r"[0-9a-f]{64}(?:[0-9a-f]{64})?")  # a hash or key (32 bytes) or a signature (64)
FACE_KEYS = frozenset({"faces", "open_faces", "wild_face", "deck_faces"})


def _hex_to(value: Any, enc: Callable[[bytes], Any]) -> Any:
    if isinstance(value, str) and HEX.fullmatch(value):
        return enc(bytes.fromhex(value))
    if isinstance(value, dict):
        return {k: _hex_to(v, enc) for k, v in value.items()}
    if isinstance(value, list):
        return [_hex_to(v, enc) for v in value]
    return value


def _no_faces(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_faces(v) for k, v in value.items() if k not in FACE_KEYS}
    if isinstance(value, list):
        return [_no_faces(v) for v in value]
    return value


def _ms(iso: Any) -> Any:
    if isinstance(iso, str):
        return int(datetime.fromisoformat(iso).timestamp() * 1000)
    return iso


def lean(msg: dict[str, Any], head_sig: bool = True) -> dict[str, Any]:
    """The message without what the client can rebuild (see the module's docstring)."""
    m: dict[str, Any] = _no_faces(msg)
    if m.get("type") == "update":
        m = {**m, "deadline": _ms(m.get("deadline"))}
        if not head_sig:
            m.pop("head_sig", None)
    if m.get("type") == "hand":
        m = {**m, "deadline": _ms(m.get("deadline"))}
    result = m.get("result")
    if m.get("type") == "reply" and isinstance(result, dict) and "ack" in result:
        result = {k: v for k, v in result.items() if k not in ("i", "h")}
        update = result.get("update")
        if isinstance(update, dict):
            update = {k: v for k, v in update.items() if k not in ("table_id", "hand_no", "i", "h", "head_sig")}
            update["deadline"] = _ms(update.get("deadline"))
            result["update"] = update
        m = {**m, "result": result}
    return m


WORD = re.compile(r"[a-z][a-z_:]{0,23}")  # a protocol word: a kind, a phase, a status, an outcome


def msgpack_size(v: Any, tags: bool = False) -> int:
    """The exact length of ``v`` in MessagePack (bytes as bin, str as UTF-8 str).  With
    ``tags`` every map key and every protocol word among the values (``update``,
    ``discard``, ``playing``…) is a number from a table both sides know (one byte:
    there are fewer than 128 of them)."""
    if tags and isinstance(v, str) and WORD.fullmatch(v):
        return 1
    if v is None or isinstance(v, bool):
        return 1
    if isinstance(v, int):
        if -32 <= v <= 127:
            return 1
        if v >= 0:  # uint 8, 16, 32, 64
            return 2 if v <= 0xFF else 3 if v <= 0xFFFF else 5 if v <= 0xFFFFFFFF else 9
        return 2 if v >= -0x80 else 3 if v >= -0x8000 else 5 if v >= -0x80000000 else 9  # int 8, 16, 32, 64
    if isinstance(v, float):
        return 9
    if isinstance(v, bytes):
        n = len(v)
        return n + (2 if n <= 0xFF else 3 if n <= 0xFFFF else 5)
    if isinstance(v, str):
        n = len(v.encode())
        return n + (1 if n <= 31 else 2 if n <= 0xFF else 3 if n <= 0xFFFF else 5)
    if isinstance(v, list):
        k = len(v)
        return (1 if k <= 15 else 3 if k <= 0xFFFF else 5) + sum(msgpack_size(x, tags) for x in v)
    if isinstance(v, dict):
        k = len(v)
        keys = k if tags else sum(msgpack_size(a) for a in v)
        return (1 if k <= 15 else 3 if k <= 0xFFFF else 5) + keys + sum(msgpack_size(b, tags) for b in v.values())
    raise TypeError(type(v))


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def weigh(texts: list[str]) -> dict[str, Counter[str]]:
    """Bytes by encoding, then by kind of frame."""
    out: dict[str, Counter[str]] = {k: Counter() for k in ("today", "lean", "binary", "tagged", "mover_sig")}
    for text in texts:
        msg = json.loads(text)
        kind = frame_kind(msg)
        out["today"][kind] += len(text.encode())
        slim = lean(msg)
        out["lean"][kind] += len(json.dumps(_hex_to(slim, b64), separators=(",", ":")).encode())
        out["binary"][kind] += msgpack_size(_hex_to(slim, bytes))
        out["tagged"][kind] += msgpack_size(_hex_to(slim, bytes), tags=True)
        out["mover_sig"][kind] += len(
            json.dumps(_hex_to(lean(msg, head_sig=False), b64), separators=(",", ":")).encode()
        )
    return out


async def run(args: argparse.Namespace) -> None:
    sent: list[str] = []
    recording = False
    original = telling.Connection.push_text

    def push_text(self: telling.Connection, text: str) -> None:
        if recording and not self.closed:
            sent.append(text)
        original(self, text)

    telling.Connection.push_text = push_text  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="push-bytes-") as tmp:
        running = await bench_server(Path(tmp) / "data", args.database_url)
        client: Client | None = None
        try:
            client = Client(running.url, args.tables, args.seed)
            await client.until_ready(args.setup_timeout)
            await client.idle(args.warmup)
            a0, t0 = actions_stored(running.app), time.monotonic()
            recording = True
            await client.idle(args.seconds)
            recording = False
            actions, wall = actions_stored(running.app) - a0, time.monotonic() - t0
        finally:
            if client is not None:
                client.stop()
            await running.stop()
    telling.Connection.push_text = original  # type: ignore[method-assign]
    if not actions:
        raise SystemExit("no action was stored in the window")
    weights = weigh(sent)
    kinds = sorted(weights["today"], key=lambda k: -weights["today"][k])
    print(
        f"{args.tables} six-seat tables, {actions} actions in {wall:.1f} s, {len(sent)} frames sent "
        f"({len(sent) / actions:.2f} an action)\n"
    )
    names = {
        "today": "today's JSON",
        "lean": "lean JSON",
        "binary": "binary (MessagePack)",
        "tagged": "binary, keys and words as numbers",
        "mover_sig": "lean JSON, signatures at the mover only",
    }
    print(f"{'bytes an action':44s}" + "".join(f"{k:>14s}" for k in kinds) + f"{'all':>10s}")
    for key, label in names.items():
        w = weights[key]
        print(f"{label:44s}" + "".join(f"{w[k] / actions:14.0f}" for k in kinds) + f"{sum(w.values()) / actions:10.0f}")
    if args.sample:
        print()
        seen: Counter[str] = Counter()
        for text in sent:
            kind = frame_kind(json.loads(text))
            if seen[kind] < args.sample:
                seen[kind] += 1
                print(f"{kind} ({len(text)} bytes): {text}")
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps(
                {
                    "tables": args.tables,
                    "actions": actions,
                    "frames": len(sent),
                    "bytes_per_action": {key: {k: weights[key][k] / actions for k in kinds} for key in names},
                },
                indent=1,
            )
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=4, help="six-seat tables (default 4)")
    ap.add_argument("--seconds", type=float, default=10.0, help="the window (default 10)")
    ap.add_argument("--warmup", type=float, default=5.0, help="seconds of play before the window")
    ap.add_argument("--sample", type=int, default=0, metavar="N", help="print N frames of each kind")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--setup-timeout", type=float, default=120.0)
    ap.add_argument("--json-out", default=None, help="also write the figures as JSON")
    ap.add_argument("--database-url", default=None, help="an existing PostgreSQL (default: embedded)")
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
