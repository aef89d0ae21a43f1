"""The REST API as an OpenAPI document, served at ``GET /api/openapi.json``.

The document is exact: every constraint the server enforces on a request is in it
(path and query parameters with their patterns and integer ranges, request bodies
generated from the schemas the server checks them against, :mod:`service.wire`,
required where the server requires them), and every answer the server gives is
listed with its schema.  A test compares the paths and methods with the
application's routes, and Schemathesis fuzzes a live server against the document
(tests/test_schemathesis.py).  docs/api.md is the prose companion.

Why OpenAPI 3.0 and not 3.1: the server takes an integer only as JSON spells one —
no fraction, no exponent (``4.0`` and ``4e0`` are refused: no floats near money).
JSON Schema 2020-12 (OpenAPI 3.1's) counts ``4.0`` as an integer and cannot say
otherwise; OpenAPI 3.0's schema (JSON Schema draft 4's) defines an integer as "a JSON
number without a fraction or exponent part", which is the server's rule exactly.

Two rules no JSON Schema can express are named by a ``format`` and described: a
player's Ed25519 key must be a strict key (``ed25519-public-key``: a canonical
encoding of a point of large order, else 400 ``bad_key``), and a ``leave``'s
signature must verify (``ed25519-signature``).  A table's settings that depend on
each other (``min_players`` ≤ ``seats``) are spelled out as alternatives.

``GET /ws``, the WebSocket (``/ws?table=ID`` on a server of several workers), is not
in it: OpenAPI describes request and response, not a socket's messages; docs/api.md
describes it (and the document's description says so).  ``/metrics`` is described as
the server that serves the document treats it: with ``serve --metrics-listen``, the
public port asks everyone for the operator token (:func:`document`'s argument).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from service import wire
from service.namepattern import name_pattern

#: a string the server accepts as text: valid UTF-8 without NUL (wire.Text)
NO_NUL = "^[^\\u0000]*$"
ID_PATTERN = f"^{wire._ID.pattern}$"


def schema_of(spec: wire.Spec) -> dict[str, Any]:
    """JSON Schema (draft 4, as OpenAPI 3.0 uses it) for a wire schema."""
    if isinstance(spec, wire.Int):
        out: dict[str, Any] = {"type": "integer", "minimum": spec.lo, "maximum": spec.hi}
        if spec.choices:
            out["enum"] = list(spec.choices)
        return out
    if isinstance(spec, wire.Hex):
        return {"type": "string", "pattern": f"^[0-9a-f]{{{2 * spec.nbytes}}}$"}
    if isinstance(spec, wire.Name):
        return {  # the length is in the pattern alone (service.namepattern)
            "type": "string",
            "pattern": name_pattern(spec.hi),
            "description": f"1 to {spec.hi} characters of visible text: no bidirectional or other control or "
            "format characters, no unassigned code points, no spaces at either end, at most four combining marks "
            "in a row (refused as bad_name)",
        }
    if isinstance(spec, wire.Text):
        pattern = NO_NUL if spec.pattern is None else f"^{spec.pattern.pattern}$"
        return {"type": "string", "minLength": spec.lo, "maxLength": spec.hi, "pattern": pattern}
    if isinstance(spec, wire.Bool):
        return {"type": "boolean"}
    if isinstance(spec, wire.ListOf):
        return {"type": "array", "items": schema_of(spec.item), "maxItems": spec.hi}
    if isinstance(spec, wire.Obj):
        props = {k: schema_of(v) for k, v in {**spec.required, **(spec.optional or {})}.items()}
        out = {"type": "object", "properties": props, "additionalProperties": False}
        if spec.required:
            out["required"] = list(spec.required)
        return out
    raise TypeError(f"no JSON Schema for {spec!r}")


def _body_schema(spec: wire.Obj) -> dict[str, Any]:
    """A request body's schema, with what the server checks beyond each field."""
    out = schema_of(spec)
    if spec is wire.NEW_PLAYER or spec is wire.PLAYER_KEY:
        out["properties"]["public_key"]["format"] = "ed25519-public-key"
        out["properties"]["public_key"]["description"] = (
            "a strict Ed25519 public key (docs/fairness.md §9: a canonical encoding of a point that is not of "
            "small order), else 400 bad_key; one player's own, else 409 key_in_use"
        )
    if spec is wire.NEW_TABLE:
        # min_players ≤ seats (D2): one alternative per seat count (6 when left out).
        alternatives = []
        for seats in (4, 6, 8):
            alt = {**out, "properties": dict(out["properties"])}
            alt["properties"]["seats"] = {"type": "integer", "enum": [seats]}
            alt["properties"]["min_players"] = {"type": "integer", "minimum": 2, "maximum": seats}
            if seats != 6:
                alt["required"] = ["seats"]
            alternatives.append(alt)
        return {"oneOf": alternatives}
    return out


# ----------------------------------------------------------------------------- answers
def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props) if required is None else required}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "nullable": True}


INT = {"type": "integer"}
AMOUNT = {"type": "integer", "minimum": 0, "description": "HT minor units"}
TEXT = {"type": "string"}
WHEN = {"type": "string", "description": "ISO 8601 time"}
BOOL = {"type": "boolean"}
ANY_OBJECT = {"type": "object"}

ERROR = _obj(
    {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": TEXT,
                "message": TEXT,
                "rule": {"type": "string", "description": "the decision (docs/rules.md) that refused it"},
                "ack": {"type": "object", "description": "a refused move: the server's signed ack (fairness §15)"},
            },
        }
    }
)
SEATED = _obj({"seat": INT, "player_id": TEXT, "name": TEXT})
TABLE_RULES = {k: INT for k in ("seats", "point_value", "commission_bps", "turn_seconds", "max_missed_turns")}
TABLE = _obj(
    {
        "id": TEXT,
        **TABLE_RULES,
        "min_players": INT,
        "max_away_hands": INT,
        "status": {"type": "string", "enum": ["open", "closing", "closed"]},
        "hold": AMOUNT,
        "seated": {"type": "array", "items": SEATED},
        "next_hand_no": INT,
    }
)
TABLE_DETAIL = {
    **TABLE,
    "properties": {
        **TABLE["properties"],
        "hand": _nullable(_obj({"hand_id": INT, "hand_no": INT, "phase": TEXT, "seats": {"type": "array"}})),
    },
    "required": [*TABLE["required"], "hand"],
}
NEW_TABLE_ANSWER = _obj({"id": TEXT, **TABLE_RULES, "min_players": INT, "max_away_hands": INT})
HAND_STATUS = {"type": "string", "enum": ["seeding", "playing", "ended", "void"]}
MY_HAND = _obj(
    {
        "hand_id": INT,
        "table_id": TEXT,
        "hand_no": INT,
        "status": HAND_STATUS,
        "seat": INT,
        "points": _nullable(INT),
        "delta": _nullable(INT),
        "winner": _nullable(INT),
        "ended_at": _nullable(WHEN),
        "transcript": _nullable(TEXT),
    }
)
HOLD = _obj({"hand_id": INT, "table_id": TEXT, "amount": AMOUNT})
SEAT = _obj({"table_id": TEXT, "seat": INT})
PLAYER_ROW = _obj(
    {
        "id": TEXT,
        "name": TEXT,
        "bot": BOOL,
        "available": AMOUNT,
        "held": AMOUNT,
        "seats": {"type": "array", "items": ANY_OBJECT},
        "created_at": WHEN,
    }
)
HAND_ROW = _obj(
    {
        "hand_id": INT,
        "table_id": TEXT,
        "hand_no": INT,
        "status": HAND_STATUS,
        "started_at": WHEN,
        "ended_at": _nullable(WHEN),
        "void_reason": _nullable(TEXT),
        "players": {"type": "array", "items": ANY_OBJECT},
        "transcript": _nullable(TEXT),
    }
)
AUDIT_ROW = _obj(
    {"id": INT, "at": WHEN, "action": TEXT, "target": _nullable(TEXT), "params": ANY_OBJECT, "outcome": TEXT}
)
TABLE_ANSWER = {"type": "object", "description": "the table's answer (docs/api.md)"}
#: one worker's state in /healthz (service.health): a worker that did not answer is
#: listed as {"worker": its index, "ok": false, "error": why}
WORKER_STATE = {
    "type": "object",
    "required": ["worker", "ok"],
    "properties": {
        "worker": {"description": "the worker's id (a string), or its index (an integer) when it did not answer"},
        "pid": INT,
        "ok": BOOL,
        "problems": {"type": "array", "items": TEXT},
        "tables": INT,
        "paused": INT,
        "connections": INT,
        "error": {"type": "string", "description": "why a worker gave no state"},
    },
}


def _health(ok: bool) -> dict[str, Any]:
    return _obj(
        {
            "ok": {"type": "boolean", "enum": [ok]},
            "status": {"type": "string", "enum": ["ok" if ok else "degraded"]},
            "problems": {"type": "array", "items": TEXT, **({"maxItems": 0} if ok else {"minItems": 1})},
            "tables": INT,
            "paused": INT,
            "workers": {"type": "array", "items": WORKER_STATE, "minItems": 1},
        }
    )


HEALTH_OK = _health(True)
HEALTH_DEGRADED = _health(False)

#: the schema of each route's successful answer
ANSWERS: dict[tuple[str, str], dict[str, Any]] = {
    ("get", "/healthz"): HEALTH_OK,
    ("post", "/api/players"): _obj({"id": TEXT, "name": TEXT, "token": TEXT, "available": AMOUNT}),
    ("post", "/api/players/{player_id}/deposit"): _obj({"id": TEXT, "available": AMOUNT, "held": AMOUNT}),
    ("post", "/api/players/{player_id}/withdraw"): _obj({"id": TEXT, "available": AMOUNT, "held": AMOUNT}),
    ("put", "/api/me/key"): _obj({"id": TEXT, "public_key": TEXT}),
    ("post", "/api/tables"): NEW_TABLE_ANSWER,
    ("get", "/api/tables"): _obj({"tables": {"type": "array", "items": TABLE}}),
    ("get", "/api/tables/{table_id}"): TABLE_DETAIL,
    ("post", "/api/tables/{table_id}/sit"): TABLE_ANSWER,
    ("post", "/api/tables/{table_id}/leave"): TABLE_ANSWER,
    ("post", "/api/tables/{table_id}/close"): _obj({"id": TEXT, "status": TEXT}),
    ("post", "/api/tables/{table_id}/seats/{seat}/stand"): _obj(
        {"table_id": TEXT, "seat": INT, "player_id": TEXT, "now": BOOL}
    ),
    ("get", "/api/session"): _obj({"player": _nullable(_obj({"id": TEXT, "name": TEXT}))}),
    ("post", "/api/session"): _obj({"id": TEXT, "name": TEXT}),
    ("delete", "/api/session"): _obj({"signed_out": BOOL}),
    ("post", "/api/session/ticket"): _obj({"ticket": TEXT, "expires_in": INT}),
    ("get", "/api/me"): _obj(
        {
            "id": TEXT,
            "name": TEXT,
            "available": AMOUNT,
            "held": AMOUNT,
            "public_key": _nullable(TEXT),
            "holds": {"type": "array", "items": HOLD},
            "seats": {"type": "array", "items": SEAT},
        }
    ),
    ("get", "/api/me/hands"): _obj({"hands": {"type": "array", "items": MY_HAND}}),
    ("get", "/api/hands/{hand_id}/transcript"): {
        "type": "object",
        "description": "the signed transcript (docs/fairness.md); rummy-verify checks it",
    },
    ("post", "/api/hands/{hand_id}/void"): TABLE_ANSWER,
    ("get", "/api/fairness/key"): _obj(
        {
            "algorithm": TEXT,
            "protocol": TEXT,
            "public_key_hex": TEXT,
            "public_key_base64": TEXT,
            "public_key_pem": TEXT,
            "fingerprint": TEXT,
        }
    ),
    ("get", "/api/ledger"): {**_obj({"ok": BOOL}), "description": "the ledger's totals and invariants"},
    ("get", "/api/admin/players"): _obj({"players": {"type": "array", "items": PLAYER_ROW}, "total": INT}),
    ("get", "/api/admin/players/{player_id}"): {
        **PLAYER_ROW,
        "properties": {
            **PLAYER_ROW["properties"],
            "holds": {"type": "array", "items": HOLD},
            "hands": {"type": "array", "items": MY_HAND},
        },
        "required": [*PLAYER_ROW["required"], "holds", "hands"],
    },
    ("get", "/api/admin/hands"): _obj({"hands": {"type": "array", "items": HAND_ROW}, "total": INT}),
    ("post", "/api/admin/operator-token"): _obj({"token": TEXT}),
    ("get", "/api/admin/audit"): _obj({"audit": {"type": "array", "items": AUDIT_ROW}, "total": INT}),
    ("get", "/api/openapi.json"): _obj({"openapi": TEXT, "info": ANY_OBJECT, "paths": ANY_OBJECT}),
}

# ----------------------------------------------------------------------------- routes
OPERATOR, PLAYER, ANYONE, LOCAL = "operator", "player", "anyone", "local"

#: (method, path, who, summary, request body schema or None)
ROUTES: list[tuple[str, str, str, str, wire.Obj | None]] = [
    (
        "get",
        "/healthz",
        ANYONE,
        "The whole server's health, whichever worker answers: every worker's database, tables, paused tables",
        None,
    ),
    ("post", "/api/players", OPERATOR, "Create a player (and deposit) in one transaction", wire.NEW_PLAYER),
    ("post", "/api/players/{player_id}/deposit", OPERATOR, "Deposit HT minor units", wire.DEPOSIT),
    ("post", "/api/players/{player_id}/withdraw", OPERATOR, "Withdraw HT minor units (never below 0)", wire.DEPOSIT),
    ("put", "/api/me/key", PLAYER, "Register the Ed25519 key the player signs moves with", wire.PLAYER_KEY),
    ("post", "/api/tables", OPERATOR, "Create a table (bad settings are refused, never repaired)", wire.NEW_TABLE),
    ("get", "/api/tables", ANYONE, "The lobby: every table, its stakes and who sits", None),
    ("get", "/api/tables/{table_id}", ANYONE, "One table, its status and the hand in progress", None),
    ("post", "/api/tables/{table_id}/sit", PLAYER, "Sit (needs 130 × point value available, D20)", wire.SIT),
    ("post", "/api/tables/{table_id}/leave", PLAYER, "Leave (a signed move during your hand, D15)", wire.LEAVE),
    ("post", "/api/tables/{table_id}/close", OPERATOR, "Close the table after its hand in progress", None),
    ("post", "/api/tables/{table_id}/seats/{seat}/stand", OPERATOR, "Stand a seat up (now, or as its hand ends)", None),
    ("get", "/api/session", ANYONE, "Whom this browser's session cookie speaks for (null: nobody)", None),
    ("post", "/api/session", ANYONE, "Sign in with a player token: an HttpOnly session cookie", wire.SIGN_IN),
    ("delete", "/api/session", ANYONE, "Sign out: the session ends, its cookie is cleared", None),
    (
        "post",
        "/api/session/ticket",
        ANYONE,
        "A one-time ticket (one socket, a minute) for a WebSocket at another node of the card room",
        None,
    ),
    ("get", "/api/me", PLAYER, "Balance, holds, seats and key", None),
    ("get", "/api/me/hands", PLAYER, "The player's hand history", None),
    ("get", "/api/hands/{hand_id}/transcript", ANYONE, "The signed transcript of an ended hand", None),
    ("post", "/api/hands/{hand_id}/void", OPERATOR, "Void a hand in progress (D33)", wire.VOID),
    ("get", "/api/fairness/key", ANYONE, "The server's Ed25519 public key and fingerprint", None),
    ("get", "/api/ledger", OPERATOR, "Ledger totals and invariants", None),
    ("get", "/api/admin/players", OPERATOR, "List players (?q, limit, offset)", None),
    ("get", "/api/admin/players/{player_id}", OPERATOR, "One player: balance, seats, holds, hands", None),
    ("get", "/api/admin/hands", OPERATOR, "List hands (?table, status, player, limit, offset)", None),
    ("post", "/api/admin/operator-token", OPERATOR, "Rotate the operator token (the old one stops working)", None),
    ("get", "/api/admin/audit", OPERATOR, "The audit log of operator actions", None),
    ("get", "/api/openapi.json", ANYONE, "This document", None),
    ("get", "/metrics", LOCAL, "Prometheus metrics of the whole server (every worker summed)", None),
]

PATH_PARAMS: dict[str, dict[str, Any]] = {
    "player_id": {"type": "string", "pattern": ID_PATTERN, "minLength": 1, "maxLength": 64},
    "table_id": {"type": "string", "pattern": ID_PATTERN, "minLength": 1, "maxLength": 64},
    "hand_id": {"type": "integer", "minimum": 1, "maximum": wire.INT64_MAX},
    "seat": {"type": "integer", "minimum": 0, "maximum": 7},
}
LIMIT = {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}
OFFSET = {"type": "integer", "minimum": 0, "maximum": 10**9, "default": 0}
QUERY_PARAMS: dict[str, dict[str, dict[str, Any]]] = {
    "/api/admin/players": {
        "q": {"type": "string", "minLength": 1, "maxLength": 64, "pattern": NO_NUL},
        "limit": LIMIT,
        "offset": OFFSET,
    },
    "/api/admin/hands": {
        "table": PATH_PARAMS["table_id"],
        "status": HAND_STATUS,
        "player": PATH_PARAMS["player_id"],
        "limit": LIMIT,
        "offset": OFFSET,
    },
    "/api/admin/audit": {"limit": LIMIT, "offset": OFFSET},
}

#: why each refusal happens (the error codes: docs/api.md)
REFUSALS = {
    "307": "The table is served by another node: the same request there (method and body kept)",
    "400": "A typed error: the request does not fit (bad_request, bad_message, bad_amount, bad_table, bad_name, "
    "bad_key, or a rule of the table)",
    "401": "No valid token: unauthorized, or token_rotated",
    "403": "bad_origin: a browser session used from another site's page",
    "404": "no_such_table, no_such_player or no_such_hand",
    "409": "The state of things refuses it now (insufficient_balance, seat_taken, already_seated, table_full, "
    "table_closed, not_seated, no_such_seat, no_player_key, hand_over, void_owes_move, hand_in_progress, key_in_use, "
    "idempotency_key_reused)",
    "410": "void_without_transcript: the hand was voided before it had a transcript",
    "413": "message_too_large: a body of more than 8 KiB",
    "503": "unavailable (the database is away, or the table is between nodes: try again) or busy; for an "
    "operator's command that stores, outcome_unknown (the database's connection broke during its COMMIT)",
}

#: The commands a client may send again with an ``Idempotency-Key`` (service.once)
KEYED = ("/api/players/{player_id}/deposit", "/api/players/{player_id}/withdraw", "/api/tables")
IDEMPOTENCY_PARAM = {
    "name": wire.IDEMPOTENCY_HEADER,
    "in": "header",
    "required": False,
    "description": "8-100 letters, digits and . _ : - (a UUID fits): sent again with the same key, the command is "
    "answered as the first time (header Idempotent-Replayed: true) and moves nothing; kept 7 days",
    "schema": {"type": "string", "pattern": "^" + wire.IDEMPOTENCY_KEY.pattern + "$"},
}


def _refusals(method: str, path: str, who: str, body: wire.Obj | None) -> list[str]:
    if path == "/healthz":
        return []  # never an error: a worker or a database that fails is its 503 "degraded" answer
    codes = {"400"} if ("{" in path or body is not None or path in QUERY_PARAMS) else set()
    if path not in ("/api/openapi.json", "/api/fairness/key"):
        codes.add("503")  # the database is away
    if who in (OPERATOR, LOCAL):
        codes.add("401")
    if who == PLAYER:
        codes |= {"401", "403"}
    if body is not None:
        codes.add("413")
    if path.startswith("/api/tables/{table_id}") or path == "/api/hands/{hand_id}/void":
        codes |= {"307", "404", "409"}
    if "{player_id}" in path or path.startswith("/api/hands/"):
        codes.add("404")
    if path.endswith(("/deposit", "/withdraw")):
        codes.add("409")  # insufficient_balance
    if path.startswith("/api/hands/") and path.endswith("/transcript"):
        codes |= {"409", "410"}
    if path in ("/api/players", "/api/me/key"):
        codes.add("409")  # key_in_use
    if path == "/api/session" and method != "get":
        codes |= {"403"} | ({"401"} if method == "post" else set())  # another site's page; a bad token
    if path == "/api/session/ticket":
        codes |= {"401", "403"}  # no live session; another site's page
    if path in ("/api/tables", "/api/players") and method == "post":
        codes.add("503")
    if method == "post" and path in KEYED:
        codes.add("409")  # idempotency_key_reused
    return sorted(codes)


def _operation(method: str, path: str, who: str, summary: str, body: wire.Obj | None) -> dict[str, Any]:
    responses: dict[str, Any] = {}
    if path == "/metrics":
        responses["200"] = {
            "description": "Prometheus text exposition format",
            "content": {"text/plain": {"schema": TEXT}},
        }
    else:
        created = method == "post" and path in ("/api/players", "/api/tables", "/api/admin/operator-token")
        responses["201" if created else "200"] = {
            "description": "Created" if created else "OK",
            "content": {"application/json": {"schema": ANSWERS[(method, path)]}},
        }
    if method == "post" and path in KEYED:
        responses["201" if created else "200"]["headers"] = {
            wire.IDEMPOTENT_REPLAYED: {
                "description": "true: the answer of the first sending with this Idempotency-Key, as stored",
                "schema": {"type": "string", "enum": ["true"]},
            }
        }
    if path == "/healthz":
        responses["503"] = {
            "description": "degraded: a worker did not answer, or its database did not, or tables are paused "
            "waiting for their database (D32); every worker's state and the problems in words",
            "content": {"application/json": {"schema": HEALTH_DEGRADED}},
        }
    for code in _refusals(method, path, who, body):
        refusal: dict[str, Any] = {"description": REFUSALS[code]}
        if code == "307":
            refusal["headers"] = {"Location": {"description": "the owner's URL", "schema": TEXT}}
        else:
            refusal["content"] = {"application/json": {"schema": ERROR}}
        responses[code] = refusal
    op: dict[str, Any] = {"summary": summary, "operationId": f"{method}{path}", "responses": responses}
    if who == OPERATOR:
        op["security"] = [{"bearer": []}]
        op["description"] = "Needs the operator's bearer token."
    elif who == PLAYER:
        op["security"] = [{"bearer": []}, {"session": []}]
        op["description"] = "Needs the player's bearer token or session cookie."
    elif who == LOCAL:
        op["security"] = [{"bearer": []}, {}]
        op["description"] = (
            "Needs the operator's bearer token, unless asked from this machine (127.0.0.1 or ::1). "
            "Started with --metrics-listen, this server serves /metrics on an address of its own."
        )
    if path == "/metrics" and who == OPERATOR:
        op["description"] = (
            "Needs the operator's bearer token, from anywhere: this server serves /metrics without one on the "
            "address of its own that serve --metrics-listen HOST:PORT gave (not described here: nothing else is "
            "served there)."
        )
    if body is not None:
        op["requestBody"] = {
            "required": bool(body.required),
            "content": {"application/json": {"schema": _body_schema(body)}},
        }
    names = [p.strip("{}") for p in path.split("/") if p.startswith("{")]
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": PATH_PARAMS[name]} for name in names
    ]
    query = QUERY_PARAMS.get(path, {})
    params += [{"name": k, "in": "query", "required": False, "schema": v} for k, v in query.items()]
    if method == "post" and path in KEYED:
        params.append(IDEMPOTENCY_PARAM)
    if params:
        op["parameters"] = params
    return op


@cache
def document(metrics_elsewhere: bool = False) -> dict[str, Any]:
    """The document of a server; ``metrics_elsewhere``: one started with
    ``--metrics-listen``, whose public port asks everyone for the operator token on
    ``/metrics`` (service.api_public)."""
    paths: dict[str, dict[str, Any]] = {}
    for method, path, who, summary, body in ROUTES:
        if path == "/metrics" and metrics_elsewhere:
            who = OPERATOR
        paths.setdefault(path, {})[method] = _operation(method, path, who, summary, body)
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "rummy-table",
            "version": "2",
            "description": "Provably-fair 13-card rummy tables. Amounts are integers of HT (house tokens) in "
            "minor units; an integer is written without a fraction or exponent. The WebSocket protocol and "
            "every error code: docs/api.md (the WebSocket, GET /ws or GET /ws?table=ID, is described there, not here: "
            "OpenAPI describes no socket); the fairness protocol (rummy-pf/v2): docs/fairness.md.",
        },
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "session": {"type": "apiKey", "in": "cookie", "name": "rummy_session"},
            }
        },
        "paths": paths,
    }


def __getattr__(name: str) -> Any:
    """``OPENAPI``: the document, built on first use (the name pattern takes a pass
    over every code point)."""
    if name == "OPENAPI":
        return document()
    raise AttributeError(name)
