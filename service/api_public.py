"""What anyone may read: a hand's transcript, the fairness key, the API document,
the health and the metrics of the server."""

from __future__ import annotations

import asyncio
import base64

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from service import wire
from service.appkeys import CONFIG, LEDGER_AUDIT, METRICS, POOL
from service.db import connection
from service.edge import ApiError, require_operator
from service.health import DATABASE_SECONDS, decide
from service.health import local as local_health
from service.internal import SIBLINGS, gather_health, gather_live
from service.metrics import multiprocess, sum_live, whole_server
from service.openapi import document as openapi_document
from verifier.record import PROTOCOL
from verifier.signing import public_pem


async def transcript(request: web.Request) -> web.Response:
    hand_id = wire.path_int(request.match_info["hand_id"], "a hand id")
    async with connection(request.app[POOL]) as conn:
        row = await conn.fetchrow(
            "SELECT status, transcript::text AS transcript, void_reason FROM hands WHERE id = $1", hand_id
        )
    if row is None:
        raise ApiError(404, "no_such_hand", f"no hand {hand_id}")
    if row["transcript"] is None:
        if row["status"] == "void":
            raise ApiError(410, "void_without_transcript", f"the hand was voided: {row['void_reason']}")
        raise ApiError(409, "hand_in_progress", "the transcript is published when the hand ends")
    return web.Response(text=row["transcript"], content_type="application/json")


async def fairness_key(request: web.Request) -> web.Response:
    signer = request.app[CONFIG].keys.signer
    raw = signer.public_bytes
    return web.json_response(
        {
            "algorithm": "Ed25519",
            "protocol": PROTOCOL,
            "public_key_hex": raw.hex(),
            "public_key_base64": base64.b64encode(raw).decode(),
            "public_key_pem": public_pem(raw),
            "fingerprint": signer.fingerprint,
        }
    )


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(openapi_document(request.app[CONFIG].metrics_elsewhere))


async def health(request: web.Request) -> web.Response:
    """The whole server's health, whichever worker is asked (service.health)."""
    app = request.app
    # Its own state and its siblings' at once: each asks its database for at most
    # DATABASE_SECONDS (and gives a connection cut short back within half a second), and
    # a sibling is given 3 s more to say so, however busy the machine (a hung database
    # is named as such, not as a worker that does not answer).
    own = asyncio.ensure_future(local_health(app))
    others = await gather_health(app[SIBLINGS], DATABASE_SECONDS + 3.0) if SIBLINGS in app else []
    status, body = decide([await own, *others])
    return web.json_response(body, status=status)


async def metrics(request: web.Request) -> web.Response:
    """Prometheus text; for the operator, or anyone on this machine (a scraper) unless
    the metrics have an address of their own (``serve --metrics-listen``)."""
    if request.app[CONFIG].metrics_elsewhere or request.remote not in ("127.0.0.1", "::1"):
        await require_operator(request)
    return web.Response(body=await render_metrics(request.app), headers={"Content-Type": CONTENT_TYPE_LATEST})


async def render_metrics(app: web.Application) -> bytes:
    """The metrics of this server: of every worker, on a server of several."""
    await app[LEDGER_AUDIT].refresh(app[POOL])  # /metrics draws its figures (service.lifecycle)
    m = app[METRICS]
    if multiprocess() and SIBLINGS in app:  # a worker: the whole server's
        return whole_server(sum_live([m.read_live(), *await gather_live(app[SIBLINGS])]))
    return generate_latest(m.registry)


METRICS_OF = web.AppKey("metrics_of", web.Application)


async def _metrics_only(request: web.Request) -> web.Response:
    body = await render_metrics(request.app[METRICS_OF])
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def make_metrics_app(main: web.Application) -> web.Application:
    """``GET /metrics`` alone, for ``serve --metrics-listen``: no token asked (the
    address is the protection: a private one, or a firewall's)."""
    app = web.Application()
    app[METRICS_OF] = main
    app.router.add_get("/metrics", _metrics_only)
    return app
