"""The REST API as an OpenAPI 3.1 document, served at ``GET /api/openapi.json``.

Request bodies are generated from the schemas the server checks them against
(:mod:`service.wire`), so the document cannot promise a field the server refuses; a
test compares the paths and methods with the application's routes.  docs/api.md is
the prose companion.
"""

from __future__ import annotations

from typing import Any

from service import wire


def schema_of(spec: wire.Spec) -> dict[str, Any]:
    """JSON Schema (2020-12, as OpenAPI 3.1 uses it) for a wire schema."""
    if isinstance(spec, wire.Int):
        out: dict[str, Any] = {"type": "integer", "minimum": spec.lo, "maximum": spec.hi}
        if spec.choices:
            out["enum"] = list(spec.choices)
        return out
    if isinstance(spec, wire.Hex):
        return {"type": "string", "pattern": f"^[0-9a-f]{{{2 * spec.nbytes}}}$"}
    if isinstance(spec, wire.Name):
        return {
            "type": "string",
            "minLength": 1,
            "maxLength": spec.hi,
            "description": "visible text: no bidirectional or other control or format characters, no unassigned "
            "code points, no spaces at either end (refused as bad_name)",
        }
    if isinstance(spec, wire.Text):
        out = {"type": "string", "minLength": spec.lo, "maxLength": spec.hi}
        if spec.pattern is not None:
            out["pattern"] = f"^{spec.pattern.pattern}$"
        return out
    if isinstance(spec, wire.Bool):
        return {"type": "boolean"}
    if isinstance(spec, wire.ListOf):
        return {"type": "array", "items": schema_of(spec.item), "maxItems": spec.hi}
    if isinstance(spec, wire.Obj):
        props = {k: schema_of(v) for k, v in {**spec.required, **(spec.optional or {})}.items()}
        return {"type": "object", "properties": props, "required": list(spec.required), "additionalProperties": False}
    raise TypeError(f"no JSON Schema for {spec!r}")


ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "rule": {"type": "string"}},
        }
    },
}

OPERATOR, PLAYER, ANYONE = "operator", "player", "anyone"

#: (method, path, who, summary, request body schema or None)
ROUTES: list[tuple[str, str, str, str, wire.Obj | None]] = [
    ("get", "/healthz", ANYONE, "Liveness: the database answers; how many tables, how many paused", None),
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
    ("get", "/metrics", OPERATOR, "Prometheus metrics (operator token, or from this machine)", None),
    ("get", "/ws", PLAYER, "The WebSocket (docs/api.md): join, sit, commit, reveal, signed moves", None),
]


def _operation(method: str, path: str, who: str, summary: str, body: wire.Obj | None) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {}}},
            "4XX": {"description": "A typed error", "content": {"application/json": {"schema": ERROR}}},
        },
    }
    if method == "post" and path in ("/api/players", "/api/tables", "/api/admin/operator-token"):
        op["responses"]["201"] = op["responses"].pop("200")
    if who != ANYONE:
        op["security"] = [{"bearer": []}]
        op["description"] = f"Needs the {who}'s bearer token."
    if body is not None:
        op["requestBody"] = {"required": False, "content": {"application/json": {"schema": schema_of(body)}}}
    params = [p.strip("{}") for p in path.split("/") if p.startswith("{")]
    if params:
        op["parameters"] = [{"name": p, "in": "path", "required": True, "schema": {"type": "string"}} for p in params]
    return op


def document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for method, path, who, summary, body in ROUTES:
        paths.setdefault(path, {})[method] = _operation(method, path, who, summary, body)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "rummy-table",
            "version": "2",
            "description": "Provably-fair 13-card rummy tables. Amounts are integers of HT (house tokens) in "
            "minor units. The WebSocket protocol and every error code: docs/api.md; the fairness protocol "
            "(rummy-pf/v2): docs/fairness.md.",
        },
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": paths,
    }


OPENAPI = document()
