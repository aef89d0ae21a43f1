"""docs/deploy/nginx.conf in front of a real server, with Debian's nginx run as this
(non-root) user with its own prefix in tmp_path and a self-signed certificate made
here: the server is started by docs/deploy.md's ``proxy`` block as written, bots play
a whole hand over https and wss through nginx, and the hand verifies from a transcript
fetched through it."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.conftest import fresh_database
from tests.deploydoc import ROOT, START_BOUND, Site, blocks, free_port, tool_path

NGINX = "/usr/sbin/nginx"
SITE_CONF = ROOT / "docs" / "deploy" / "nginx.conf"


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for rummy.example, localhost and 127.0.0.1, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rummy.example")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("rummy.example"),
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "fullchain.pem", folder / "privkey.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_file.chmod(0o600)
    return cert_file, key_file


def nginx_prefix(prefix: Path, site: str) -> Path:
    """A main configuration of nginx's own for a non-root process: every path (pid,
    logs, temp files) under ``prefix``; the site file included in its http block."""
    for d in ("logs", "tmp"):
        (prefix / d).mkdir(parents=True, exist_ok=True)
    (prefix / "site.conf").write_text(site, encoding="utf-8")
    temps = "\n".join(
        f"    {kind}_temp_path {prefix}/tmp/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    main = prefix / "nginx.conf"
    main.write_text(
        f"""daemon off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log {prefix}/logs/access.log;
{temps}
    include {prefix}/site.conf;
}}
""",
        encoding="utf-8",
    )
    return main


def site_conf(replace: dict[str, str]) -> str:
    text = SITE_CONF.read_text(encoding="utf-8")
    for old, new in replace.items():
        assert text.count(old) == 1, f"docs/deploy/nginx.conf should say {old!r} once"
        text = text.replace(old, new)
    return text


def wait_listening(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_BOUND
    while True:
        assert proc.poll() is None, f"nginx exited {proc.returncode}: {log.read_text(errors='replace')[-2000:]}"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert time.monotonic() < deadline, "nginx did not listen"
        time.sleep(0.05)


async def test_a_hand_played_through_nginx_with_tls_and_websockets(pg_dsn: str, tmp_path: Path) -> None:
    token = "op-" + os.urandom(12).hex()
    upstream, https, http = free_port(), free_port(), free_port()
    cert, key = self_signed(tmp_path)
    async with fresh_database(pg_dsn, "nginx") as dsn:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "RUMMY_OPERATOR_TOKEN")}
        env |= {"PATH": tool_path(), "DATABASE_URL": dsn, "RUMMY_OPERATOR_TOKEN": token}
        server = Site(
            tmp_path / "site",
            {"--port 8080": f"--port {upstream}", "/var/lib/rummy-table": str(tmp_path / "data")},
            env,
        )
        main = nginx_prefix(
            tmp_path / "nginx",
            site_conf(
                {
                    "server 127.0.0.1:8080;": f"server 127.0.0.1:{upstream};",
                    "listen 80;": f"listen 127.0.0.1:{http};",
                    "listen 443 ssl;": f"listen 127.0.0.1:{https} ssl;",
                    "/etc/ssl/rummy-table/fullchain.pem": str(cert),
                    "/etc/ssl/rummy-table/privkey.pem": str(key),
                }
            ),
        )
        nginx = [NGINX, "-p", str(main.parent), "-c", str(main), "-e", str(main.parent / "logs" / "error.log")]
        checked = subprocess.run([*nginx, "-t"], capture_output=True, text=True, timeout=60)
        assert checked.returncode == 0, checked.stderr
        proxy: subprocess.Popen[bytes] | None = None
        try:
            server.run(blocks("proxy"))
            proxy = subprocess.Popen(nginx, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_listening(https, proxy, main.parent / "logs" / "error.log")
            await play_through(
                f"https://127.0.0.1:{https}", f"http://127.0.0.1:{http}", upstream, token, cert, tmp_path
            )
            access = (main.parent / "logs" / "access.log").read_text()
            # the bots open /ws?table=ID (issue 18: a server of several workers hands the
            # socket to the one that serves the table)
            upgraded = re.search(r'"GET /ws\?table=\S+ HTTP/1\.1" 101 ', access)
            assert upgraded, "the bots' WebSockets went through nginx"
        finally:
            if proxy is not None:
                proxy.terminate()
                proxy.wait(timeout=60)
            codes = server.stop()
    assert codes == [0], [log.read_text()[-2000:] for _, log in server.servers]


async def rest_is_paced(s: aiohttp.ClientSession, base: str) -> None:
    """The proxy paces the REST API and the WebSocket handshakes per address (the
    server paces each socket's messages, not HTTP requests): 600 requests at once
    from here are more than the burst of 100 and the rate of 20 a second can pass in
    the seconds they take, and those beyond are answered 429 in the API's error form,
    with Retry-After, before the server sees them; the pages are not paced."""

    async def one() -> tuple[int, str | None, str | None]:
        async with s.get(base + "/api/tables") as r:
            code = (await r.json())["error"]["code"] if r.status == 429 else None
            return r.status, code, r.headers.get("Retry-After")

    answers = await asyncio.gather(*(one() for _ in range(600)))
    refused = [a for a in answers if a[0] == 429]
    assert refused and {a[1:] for a in refused} == {("too_many_requests", "1")}, answers[:5]
    assert {a[0] for a in answers} == {200, 429}
    async with s.get(base + "/") as r:
        assert r.status == 200, "the pages are paced with the API"

    # WebSocket handshakes with a wrong token, each a lookup for the server: 1,000 at
    # once are more than the burst of 200 and the rate of 10 a second let through
    async def handshake() -> tuple[int, str | None]:
        try:
            async with s.ws_connect(base.replace("https", "wss") + "/ws", headers={"Authorization": "Bearer nope"}):
                return 101, None
        except aiohttp.WSServerHandshakeError as e:
            return e.status, e.headers.get("Retry-After") if e.headers else None

    shakes = await asyncio.gather(*(handshake() for _ in range(1000)))
    assert {st for st, _ in shakes} == {401, 429}, sorted({st for st, _ in shakes})
    assert {after for st, after in shakes if st == 429} == {"1"}


async def play_through(base: str, plain: str, upstream: int, token: str, cert: Path, tmp_path: Path) -> None:
    tls = ssl.create_default_context(cafile=str(cert))
    auth = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=tls)) as s:
        async with s.get(base + "/healthz") as r:
            assert r.status == 200 and (await r.json())["ok"] is True
            assert r.headers["Strict-Transport-Security"].startswith("max-age=")
        async with s.get(plain + "/lobby?x=1", allow_redirects=False) as r:
            assert r.status == 301 and r.headers["Location"] == "https://127.0.0.1/lobby?x=1"
        async with s.get(base + "/metrics") as r:
            assert r.status == 404, "the proxy must not make /metrics public"
        async with s.get(f"http://127.0.0.1:{upstream}/metrics") as r:
            assert r.status == 200  # a scraper on the host reads the server itself
        async with s.post(base + "/api/tables", json={"seats": 4, "turn_seconds": 20}, headers=auth) as r:
            assert r.status == 201, await r.text()
            table = (await r.json())["id"]
        bots = subprocess.run(
            [sys.executable, "-m", "service.cli", "bots", "--server", base, "--table", table]
            + ["--count", "2", "--fast", "--hands", "1", "--evidence", str(tmp_path / "evidence")],
            capture_output=True,
            text=True,
            env=os.environ | {"SSL_CERT_FILE": str(cert), "RUMMY_OPERATOR_TOKEN": token},
            timeout=240,
        )
        assert bots.returncode == 0, bots.stdout + bots.stderr
        assert "hand 1: winner seat" in bots.stdout, bots.stdout
        async with s.get(base + f"/api/admin/hands?table={table}", headers=auth) as r:
            hands = [h for h in (await r.json())["hands"] if h["status"] == "ended"]
        assert hands, "the hand ended"
        async with s.get(base + "/api/fairness/key") as r:
            public_key = (await r.json())["public_key_hex"]
        await rest_is_paced(s, base)
    for evidence in sorted((tmp_path / "evidence").glob("*.json")):
        verified = subprocess.run(
            [sys.executable, "-m", "verifier.cli", base + hands[0]["transcript"]]
            + ["--key", public_key, "--receipts", str(evidence), "--json"],
            capture_output=True,
            text=True,
            env=os.environ | {"SSL_CERT_FILE": str(cert)},
            timeout=120,
        )
        assert verified.returncode == 0, verified.stdout[-2000:] + verified.stderr
        assert json.loads(verified.stdout)["ok"] is True
    assert len(list((tmp_path / "evidence").glob("*.json"))) == 2
