"""Changes made after sealing (a bit of a signature, an h, the head), and the
mutant written as JSON text: in one of several styles, or changed as raw text.
"""

from __future__ import annotations

import json
import random
from typing import Any

from bench.transcript_fuzz.common import NotHere
from bench.transcript_fuzz.paths import put, walk


def post_seal(t: dict[str, Any], rng: random.Random) -> str:
    op = rng.choice(["sig_bit", "upper", "h", "head", "psig_bit"])
    log = t["log"]
    if op == "sig_bit":
        s = bytearray(bytes.fromhex(t["signature"]))
        s[rng.randrange(64)] ^= 1 << rng.randrange(8)
        t["signature"] = s.hex()
        return "the transcript signature's bit flipped"
    if op == "upper":
        p, v = rng.choice(
            [
                (p, v)
                for p, v in walk(t)
                if isinstance(v, str) and len(v) >= 64 and all(c in "0123456789abcdef" for c in v)
            ]
        )
        put(t, p, v.upper())
        return f"{'/'.join(map(str, p))} upper-cased after sealing"
    if op == "h":
        k = rng.randrange(len(log))
        log[k]["h"] = "ab" * 32
        return f"record {k}'s h replaced after sealing"
    if op == "head":
        t["head"] = log[0]["h"]
        return "head -> record 0's h"
    recs = [r for r in log if isinstance(r.get("psig"), dict)]
    if not recs:
        raise NotHere
    r = rng.choice(recs)
    s = bytearray(bytes.fromhex(r["psig"]["sig"]))
    s[rng.randrange(64)] ^= 1
    r["psig"]["sig"] = s.hex()
    return f"record {r['i']}: psig bit flipped"


def serialize(t: Any, rng: random.Random) -> bytes:
    style = rng.random()
    if style < 0.6:
        text = json.dumps(t, separators=(",", ":"), ensure_ascii=False)
    elif style < 0.8:
        indent: int | str = rng.choice((1, 2, "\t"))
        text = json.dumps(t, indent=indent, ensure_ascii=rng.random() < 0.5)
    else:
        text = json.dumps(t, sort_keys=True, ensure_ascii=True)
    return text.encode("utf-8", "surrogatepass")


def raw_mutation(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """The same value written otherwise (escapes, white space), or input §2 calls
    unreadable."""
    text = data.decode("utf-8", "surrogatepass")
    op = rng.choice(
        [
            "escape",
            "escape",
            "slash",
            "ws",
            "dupkey",
            "minus0",
            "float",
            "exp",
            "big",
            "bom",
            "nest",
            "lone",
            "ctrl",
            "trail",
            "lead0",
            "crlf",
            "nbsp",
            "nul",
        ]
    )
    if op == "escape":  # "a" as "\u0061" inside some string: the same value
        quoted: list[int] = []
        inside, k = False, 0
        while k < len(text) and len(quoted) < 5000:
            c = text[k]
            if c == "\\" and inside:
                k += 2
                continue
            if c == '"':
                inside = not inside
            elif inside and c in "abcdef0123456789":
                quoted.append(k)
            k += 1
        if not quoted:
            return op, data
        k = rng.choice(quoted)
        text = text[:k] + f"\\u{ord(text[k]):04{'x' if rng.random() < 0.5 else 'X'}}" + text[k + 1 :]
    elif op == "slash":
        text = text.replace('"rummy-pf/v2"', '"rummy-pf\\/v2"', 1)
    elif op == "ws":
        text = " \n\t" + text.replace(",", ", ", 3).replace(":", " :", 2) + "\r\n "
    elif op == "dupkey":
        key = rng.choice(['"t":', '"seat":', '"h":', '"protocol":', '"result":', '"card":'])
        k = text.find(key, rng.randrange(max(1, len(text) // 2)))
        if k < 0:
            k = text.find(key)
        if k < 0:
            return op, data
        end = text.find(",", k)
        text = text[:k] + text[k:end] + "," + text[k:]
    elif op in ("minus0", "float", "exp", "big", "lead0"):
        k = text.find('"t":')
        if k < 0:
            k = text.find('"hand_no":')
        if k < 0:
            return op, data
        colon = text.find(":", k) + 1
        end = colon
        while end < len(text) and (text[end].isdigit() or text[end] in "- "):
            end += 1
        num = text[colon:end].strip()
        rep = {"minus0": "-0", "float": num + ".0", "exp": num + "e0", "big": "9007199254740993", "lead0": "0" + num}[
            op
        ]
        text = text[:colon] + rep + text[end:]
    elif op == "bom":
        text = "\ufeff" + text
    elif op == "nest":
        depth = rng.choice([60, 63, 64, 65, 70])
        text = text[:-1] + ',"extra":' + "[" * depth + "]" * depth + "}"
    elif op == "lone":
        text = text.replace('"operator"', '"\\ud800"', 1) if '"operator"' in text else text[:-1] + ',"x":"\\udc00"}'
    elif op == "ctrl":
        k = text.find('"player_id":')
        if k < 0:
            return op, data
        q = text.find('"', k + 12) + 1
        text = text[:q] + "\u0001" + text[q:]
    elif op == "trail":
        text = text + rng.choice(["x", "{}", " null", "\u0000"])
    elif op == "crlf":
        text = text.replace(",", ",\r\n", 5)
    elif op == "nbsp":
        text = text.replace(",", ",\u00a0", 1)
    else:
        text = text.replace(":", ":\u0000", 1)
    return op, text.encode("utf-8", "surrogatepass")
