"""bench/push_bytes.py weighs the server's messages in other encodings: its MessagePack
sizes are exact and its lean messages keep every signed object whole."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from bench.push_bytes import _hex_to, b64, lean, msgpack_size


def test_msgpack_sizes_are_the_formats() -> None:
    # msgpack.org's own example: {"compact":true,"schema":0} is 27 bytes of JSON, 18 of MessagePack
    assert msgpack_size({"compact": True, "schema": 0}) == 18
    # the type boundaries of the specification (fixint, uint8/16/32/64, negative fixint, int8)
    assert [msgpack_size(n) for n in (0, 127, 128, 255, 256, 65_535, 65_536, 2**32, -1, -32, -33)] == [
        1, 1, 2, 2, 3, 3, 5, 9, 1, 1, 2,
    ]  # fmt: skip
    assert [msgpack_size("x" * n) for n in (0, 31, 32, 255, 256)] == [1, 32, 34, 257, 259]
    assert msgpack_size(b"\0" * 64) == 66 and msgpack_size([None] * 15) == 16 and msgpack_size([None] * 16) == 19
    # tagged: a field name and a protocol word are one byte each; an id stays text
    assert msgpack_size({"kind": "discard", "table_id": "t_1"}, tags=True) == 1 + 1 + 1 + 1 + 4


def test_lean_messages_keep_the_evidence_whole() -> None:
    sig, h = "ab" * 64, "cd" * 32
    ack = {"purpose": "ack", "body": {"i": 4, "h": h, "psig": sig}, "sig": sig}
    reply: dict[str, Any] = {
        "type": "reply",
        "id": "m1",
        "ok": True,
        "result": {
            "i": 4,
            "h": h,
            "ack": ack,
            "update": {
                "type": "update",
                "table_id": "t",
                "hand_no": 1,
                "i": 4,
                "h": h,
                "head_sig": sig,
                "events": [],
                "changes": {"me": {"cards": [1, 2], "faces": ["2S", "3S"]}},
                "deadline": "2026-12-02T17:48:27.939000+00:00",
            },
        },
    }
    out = lean(reply)
    assert out["result"]["ack"] == ack  # the signed acknowledgement, untouched
    assert "i" not in out["result"] and "h" not in out["result"]
    assert set(out["result"]["update"]) == {"type", "events", "changes", "deadline"}
    assert out["result"]["update"]["changes"] == {"me": {"cards": [1, 2]}}  # faces follow from ids
    assert out["result"]["update"]["deadline"] == int(
        datetime(2026, 12, 2, 17, 48, 27, 939_000, UTC).timestamp() * 1000
    )
    push = {"type": "update", "i": 4, "h": h, "head_sig": sig, "events": [], "deadline": None}
    assert lean(push)["head_sig"] == sig and "head_sig" not in lean(push, head_sig=False)
    assert reply["result"]["i"] == 4  # the message weighed is not changed
    # hashes and signatures become raw bytes or base64url; other text stays
    raw = _hex_to({"h": h, "id": "m1", "short": "abcd"}, bytes)
    assert raw == {"h": bytes.fromhex(h), "id": "m1", "short": "abcd"}
    assert len(json.dumps(_hex_to(sig, b64))) == 2 + 86
