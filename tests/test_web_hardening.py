"""The pages and the API hardened for browsers (issue 21), over real HTTP and
WebSockets: names that cannot reorder or hide text, the headers every response
carries (Content-Security-Policy by file or by hash, no framing, no sniffing, no
referrer), CORS only where a verifier elsewhere needs it, and the browser session: an
HttpOnly cookie, refused to pages of another origin."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

import aiohttp
import pytest

from service.appkeys import POOL
from service.startup import Running
from tests.conftest import OPERATOR, Api
from tests.wsclient import Client

HOSTILE_NAMES = {
    "right-to-left override": "Eve\u202e6 taes \u00b7",
    "left-to-right isolate": "Mallory\u2066",
    "pop directional isolate": "\u2069Trent",
    "right-to-left mark": "Bob\u200f",
    "arabic letter mark": "x\u061cy",
    "a C0 control": "bell\x07",
    "escape": "esc\x1b[31m",
    "a C1 control": "next\x85line",
    "zero width space": "ad\u200bmin",
    "byte order mark": "\ufeffAda",
    "line separator": "two\u2028lines",
    "unassigned": "x\u0378",
    "noncharacter": "x\ufdd0",
    "leading space": " Ada",
    "trailing space": "Ada ",
    "only spaces": "   ",
    "combining pile": "Z" + "\u0301" * 5,
    "too long": "n" * 65,
}
GOOD_NAMES = [
    "Ærøskøbing",
    "محمد علي",
    "李小龙",
    "Zoë 🎲",
    "👩\u200d💻 dev",
    "می\u200cخواهم",
    "O'Brien-Smith",
    "n" * 64,
]


# ----------------------------------------------------------------------------- names
@pytest.mark.parametrize("why", sorted(HOSTILE_NAMES))
async def test_a_hostile_name_is_refused_with_a_typed_error(api: Api, server: Running, why: str) -> None:
    before = await players_and_deposits(server)
    r = await api.call("POST", "/api/players", body={"name": HOSTILE_NAMES[why], "deposit": 10}, expect=400)
    code = r["error"]["code"]
    assert code == ("bad_request" if why == "too long" else "bad_name"), r
    assert await players_and_deposits(server) == before, "a refused name created something"


async def players_and_deposits(server: Running) -> tuple[object, ...]:
    """What a player's creation changes: the players, their names and keys, and the
    operator actions done.  (Not the hands: the shared server's other tables may
    play on meanwhile — a live hand's clock writes records whatever this test does.)"""
    async with server.app[POOL].acquire() as conn:
        row = await conn.fetchrow(
            "SELECT (SELECT COUNT(*) FROM players) AS players,"
            " (SELECT md5(string_agg(name || ':' || encode(COALESCE(public_key, ''), 'hex'), ',' ORDER BY id))"
            "  FROM players) AS names,"
            " (SELECT COUNT(*) FROM audit_log WHERE outcome = 'done') AS done"
        )
    assert row is not None
    return tuple(row)


async def test_names_of_every_script_and_emoji_are_welcome(api: Api) -> None:
    for name in GOOD_NAMES:
        p = await api.call("POST", "/api/players", body={"name": name}, expect=201)
        assert p["name"] == name


# ----------------------------------------------------------------------------- headers
def csp_of(response: aiohttp.ClientResponse) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for part in response.headers["Content-Security-Policy"].split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


def page_hashes(html: str, tag: str) -> set[str]:
    """'sha256-…' of each inline <tag> of a page, computed here on its own."""
    pattern = rf"<{tag}\b(?![^>]*\bsrc\s*=)[^>]*>(.*?)</{tag}\s*>"
    found = re.findall(pattern, html, re.IGNORECASE | re.DOTALL)
    return {"'sha256-" + base64.b64encode(hashlib.sha256(x.encode()).digest()).decode() + "'" for x in found}


async def test_every_page_has_a_strict_policy_and_cannot_be_framed(server: Running) -> None:
    async with aiohttp.ClientSession() as s:
        async with s.get(server.url + "/") as r:
            csp = csp_of(r)
            assert csp["script-src"] == ["'self'"] and csp["style-src"] == ["'self'"]
            assert csp["default-src"] == ["'none'"] and csp["frame-ancestors"] == ["'none'"]
            assert csp["object-src"] == ["'none'"] and csp["base-uri"] == ["'none'"]
            assert "'self'" in csp["connect-src"] and not any(x in ("ws:", "wss:", "*") for x in csp["connect-src"])
            assert r.headers["X-Frame-Options"] == "DENY"
        async with s.get(server.url + "/verify") as r:
            html = await r.text()
            csp = csp_of(r)
            scripts, styles = page_hashes(html, "script"), page_hashes(html, "style")
            assert scripts and styles
            assert set(csp["script-src"]) == scripts, "each inline script allowed by its hash, nothing else"
            assert set(csp["style-src"]) == styles
            assert csp["frame-ancestors"] == ["'none'"] and csp["default-src"] == ["'none'"]
            assert "'unsafe-inline'" not in r.headers["Content-Security-Policy"]
            assert r.headers["X-Frame-Options"] == "DENY"
        for path in (
            "/",
            "/verify",
            "/api/tables",
            "/api/fairness/key",
            "/web/table/main.js",
            "/nothing",
            "/favicon.ico",
        ):
            async with s.get(server.url + path) as r:
                assert r.headers["X-Content-Type-Options"] == "nosniff", path
                assert r.headers["Referrer-Policy"] == "no-referrer", path
                assert "frame-ancestors 'none'" in r.headers["Content-Security-Policy"], path
        async with s.get(server.url + "/favicon.ico") as r:
            assert r.status == 200 and (await r.read())[:4] == b"\x00\x00\x01\x00"  # an icon, not a 404


async def test_cors_only_where_a_verifier_elsewhere_needs_it(api: Api, server: Running) -> None:
    """The saved /verify page (origin null) and an auditor's page fetch a transcript
    and the key; nothing else is readable from another origin."""
    hands = await api.call("GET", "/api/admin/hands?status=ended&limit=1")
    open_to_all = ["/api/fairness/key", "/api/openapi.json"]
    if hands["hands"]:
        open_to_all.append(hands["hands"][0]["transcript"])
    p = await api.player("cors")
    closed = ["/api/tables", "/api/me", "/api/me/hands", "/api/ledger", "/healthz", "/", "/verify"]
    async with aiohttp.ClientSession() as s:
        for path in open_to_all:
            async with s.get(server.url + path, headers={"Origin": "null"}) as r:
                assert r.headers.get("Access-Control-Allow-Origin") == "*", path
                assert "Access-Control-Allow-Credentials" not in r.headers
        for path in closed:
            headers = {"Origin": "https://elsewhere.example", "Authorization": f"Bearer {p['token']}"}
            async with s.get(server.url + path, headers=headers) as r:
                assert "Access-Control-Allow-Origin" not in r.headers, path


# ----------------------------------------------------------------------------- the session
async def signed_in(server: Running, token: str, origin: str | None = None) -> aiohttp.ClientSession:
    """A client with the session cookie of ``token`` (and the page's Origin on every request)."""
    jar = aiohttp.CookieJar(unsafe=True)  # a cookie for 127.0.0.1
    s = aiohttp.ClientSession(cookie_jar=jar, headers={"Origin": origin or server.url})
    async with s.post(server.url + "/api/session", json={"token": token}) as r:
        assert r.status == 200, await r.text()
    return s


async def test_sign_in_gives_an_httponly_strict_cookie_and_no_token(api: Api, server: Running) -> None:
    p = await api.player("cookie")
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as s:
        async with s.get(server.url + "/api/session") as r:
            assert r.status == 200 and (await r.json()) == {"player": None}
        async with s.post(server.url + "/api/session", json={"token": "not-a-token"}) as r:
            assert r.status == 401 and (await r.json())["error"]["code"] == "unauthorized"
        async with s.post(server.url + "/api/session", json={"token": p["token"]}) as r:
            assert r.status == 200
            body = await r.json()
            assert body == {"id": p["id"], "name": "cookie"}  # no token, no session id in the body
            cookie = r.headers["Set-Cookie"]
        attrs = {a.strip().split("=")[0].lower() for a in cookie.split(";")}
        assert {"httponly", "samesite", "path"} <= attrs and "SameSite=Strict" in cookie
        assert "secure" not in attrs  # plain http here; over TLS it is Secure
        value = cookie.split(";")[0].split("=", 1)[1]
        assert value and p["token"] not in cookie and value != p["token"]
        async with s.get(server.url + "/api/session") as r:
            assert (await r.json())["player"] == {"id": p["id"], "name": "cookie"}
        async with s.get(server.url + "/api/me") as r:  # a same-origin read: no Origin needed
            assert r.status == 200 and (await r.json())["id"] == p["id"]


async def test_a_cookie_request_from_another_origin_is_refused(api: Api, server: Running) -> None:
    p = await api.player("csrf")
    key = {"public_key": p["signer"].public_bytes.hex()}
    s = await signed_in(server, p["token"])
    try:
        async with s.put(server.url + "/api/me/key", json=key) as r:  # the page's own origin
            assert r.status == 200, await r.text()
        for origin in ("https://evil.example", "http://127.0.0.1:1", "null"):
            async with s.put(server.url + "/api/me/key", json=key, headers={"Origin": origin}) as r:
                assert r.status == 403 and (await r.json())["error"]["code"] == "bad_origin", origin
            async with s.get(server.url + "/api/me", headers={"Origin": origin}) as r:
                assert r.status == 403, origin
        # a request that changes something must name its origin
        s2 = aiohttp.ClientSession(cookie_jar=s.cookie_jar)
        try:
            async with s2.put(server.url + "/api/me/key", json=key) as r:
                assert r.status == 403 and (await r.json())["error"]["code"] == "bad_origin"
        finally:
            await s2.close()
        # and signing in from another site's page (login CSRF) is refused too
        async with aiohttp.ClientSession() as s3:
            body = {"token": p["token"]}
            async with s3.post(server.url + "/api/session", json=body, headers={"Origin": "https://evil.example"}) as r:
                assert r.status == 403 and "Set-Cookie" not in r.headers
    finally:
        await s.close()


async def test_a_websocket_opened_by_another_site_with_the_cookie_is_refused(api: Api, server: Running) -> None:
    """Cross-site WebSocket hijacking: the browser sends the cookie with any page's
    WebSocket; the server takes it only from this card room's pages."""
    p = await api.player("wss")
    table = await api.table(seats=4)
    s = await signed_in(server, p["token"])
    try:
        for origin in ("https://evil.example", "http://127.0.0.1:9"):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await s.ws_connect(server.url + "/ws", headers={"Origin": origin}, protocols=("rummy.v2",))
            assert refused.value.status == 403
        s2 = aiohttp.ClientSession(cookie_jar=s.cookie_jar)  # no Origin at all
        try:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await s2.ws_connect(server.url + "/ws", protocols=("rummy.v2",))
            assert refused.value.status == 403
        finally:
            await s2.close()
        ws = await s.ws_connect(server.url + "/ws", headers={"Origin": server.url}, protocols=("rummy.v2",))
        try:
            hello = json.loads((await ws.receive()).data)
            assert hello["type"] == "hello" and hello["player_id"] == p["id"]
            await ws.send_str(json.dumps({"id": "j", "type": "join", "table_id": table}))
            while (reply := json.loads((await ws.receive()).data)).get("id") != "j":
                pass
            assert reply["type"] == "reply" and reply["result"]["table_id"] == table
        finally:
            await ws.close()
    finally:
        await s.close()


async def test_a_ticket_opens_one_socket_for_its_player_from_this_card_rooms_pages(api: Api, server: Running) -> None:
    """A page whose table is served by a node on another host name, where its cookie
    does not go, asks its own node for a ticket (``POST /api/session/ticket``: the
    session and a page of this card room needed) and offers it in the handshake
    (``ticket.<ticket>``).  A ticket opens one socket, for its player, from this card
    room's pages, within its minute; a used, unknown, expired or foreign one is
    refused like a wrong token, and a ticket is never a token for REST."""
    p = await api.player("ticket")
    s = await signed_in(server, p["token"])
    try:

        async def ticket() -> str:
            async with s.post(server.url + "/api/session/ticket") as r:
                assert r.status == 200, await r.text()
                body = await r.json()
                assert body["expires_in"] == 60 and body["ticket"] != p["token"]
                return str(body["ticket"])

        def handshake(value: str, origin: str | None = server.url) -> Any:
            bare = aiohttp.ClientSession()  # no cookie: as on another host
            headers = {"Origin": origin} if origin else {}
            return bare, bare.ws_connect(server.url + "/ws", headers=headers, protocols=("rummy.v2", "ticket." + value))

        one = await ticket()
        bare, opening = handshake(one)
        try:
            ws = await opening
            assert ws.protocol == "rummy.v2"
            hello = json.loads((await ws.receive()).data)
            assert hello["type"] == "hello" and hello["player_id"] == p["id"]
            await ws.close()
            again, opening = handshake(one)  # used up
            async with again:
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await opening
                assert refused.value.status == 401
        finally:
            await bare.close()
        for value, origin, status in (
            (await ticket(), "https://evil.example", 403),  # another site's page
            (await ticket(), None, 403),  # no Origin: not a page
            ("x" * 43, server.url, 401),  # unknown
        ):
            other, opening = handshake(value, origin)
            async with other:
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await opening
                assert refused.value.status == status, (value, origin)
        late = await ticket()
        async with server.app[POOL].acquire() as conn:
            await conn.execute("UPDATE ws_tickets SET expires_at = now() - interval '1 second'")
        other, opening = handshake(late)
        async with other:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await opening
            assert refused.value.status == 401
        async with aiohttp.ClientSession() as bare2:  # a ticket is not a token
            async with bare2.get(server.url + "/api/me", headers={"Authorization": "Bearer " + await ticket()}) as r:
                assert r.status == 401
        # no session, or a page of another site: no ticket
        async with aiohttp.ClientSession(headers={"Origin": server.url}) as nobody:
            async with nobody.post(server.url + "/api/session/ticket") as r:
                assert r.status == 401
        async with s.post(server.url + "/api/session/ticket", headers={"Origin": "https://evil.example"}) as r:
            assert r.status == 403
    finally:
        await s.close()


async def test_signing_out_ends_the_session(api: Api, server: Running) -> None:
    p = await api.player("bye")
    s = await signed_in(server, p["token"])
    try:
        jar = s.cookie_jar
        old = next(c.value for c in jar if c.key == "rummy_session")
        async with s.delete(server.url + "/api/session") as r:
            assert r.status == 200 and (await r.json()) == {"signed_out": True}
            assert "Max-Age=0" in r.headers["Set-Cookie"]
        async with aiohttp.ClientSession(cookies={"rummy_session": old}) as again:
            async with again.get(server.url + "/api/me") as r:
                assert r.status == 401  # the old session id is gone on the server too
    finally:
        await s.close()
    # the bearer token still works for programs
    assert (await api.call("GET", "/api/me", token=p["token"], expect=200))["id"] == p["id"]


async def test_a_closed_table_tells_its_seats_why(api: Api, server: Running) -> None:
    table = await api.table(seats=4)
    p = await api.player("closer")
    await api.call("POST", f"/api/tables/{table}/sit", token=p["token"], body={"seat": 2}, expect=200)
    async with Client(server.url, p["token"], p["signer"]) as c:
        await c.request({"type": "join", "table_id": table})
        await api.call("POST", f"/api/tables/{table}/close", body={}, expect=200, token=OPERATOR)
        push = await c.wait_frame(lambda f: f.get("type") == "table" and f["stood"])
        assert push["stood"] == [{"seat": 2, "player_id": p["id"], "reason": "closed", "rule": None, "hand_no": None}]
        assert push["seats"] == {}
        await c.wait_frame(lambda f: f.get("type") == "closed")
