"""Schemathesis (an API fuzzer) against a live server and /api/openapi.json (issue 18
item 8): every request valid by the document is accepted or refused only for the
state of things (401, 404, 409, …), every invalid one is refused, every answer is
documented with its status, content type and schema, and a method a route does not
take is answered 405 with ``Allow``.

Its command line, as an operator or an outside tester would run it, with every check,
deterministic generation (the same requests every run) and a fixed number of examples
per operation, against a server of its own (on its own database).  The fast suite runs
a short pass with the operator's token, which reaches every operation; ``-m drill`` a
long one with the operator's token and a player's side by side.  (Most of a pass is
Schemathesis's coverage phase, the boundary values of every constraint, which does not
shrink with fewer examples: each token's pass costs some 15 CPU-seconds in the fast
suite whatever the count, so the player's, where most operations answer 401 or 403,
is the drill's.)  The two operations that would disturb the other runs — voiding a hand
(hand ids are small integers a fuzzer finds) and rotating the operator token — run
last.
tests/schemathesis_hooks.py draws the one field no JSON Schema can describe (a strict
Ed25519 key) as a client makes it."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import aiohttp
import jsonschema_rs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from service.namepattern import name_pattern
from service.wire import name_problem
from tests.conftest import OPERATOR, server_of_its_own

ROOT = Path(__file__).resolve().parent.parent
FAST_EXAMPLES = 5
DRILL_EXAMPLES = 150
#: they change what the other runs rely on: run last
ISOLATED = ("/api/hands/{hand_id}/void", "/api/admin/operator-token")
#: /healthz answers 503 "degraded" while any table is paused (the fuzzer's own tables,
#: a hundred made at once, load a few at a time): the truth, which Schemathesis's
#: server-error check counts as a failure whatever the document says.  Its 200 and 503
#: bodies are checked against the document in tests/test_operator.py.
UNFUZZED = ("/healthz",)
NAME_RE = re.compile(name_pattern(64))
NAME_SCHEMA = jsonschema_rs.Draft4Validator({"type": "string", "pattern": name_pattern(64)})


async def schemathesis(
    url: str, token: str, examples: int, workdir: Path, *, only: tuple[str, ...] = ()
) -> tuple[int, str]:
    """``schemathesis run`` against ``url``: (its exit code, its report).  It runs in
    ``workdir``, where it keeps its own cache (.schemathesis/)."""
    args = [
        f"{url}/api/openapi.json",
        "--header",
        f"Authorization: Bearer {token}",
        "--checks",
        "all",
        "--max-examples",
        str(examples),
        "--generation-deterministic",
        # the alphabet Schemathesis uses anyway (every code point but NUL and the lone
        # surrogates), named so that Hypothesis can cache it: left to its default it is
        # st.characters(exclude_categories=[...]), a list Hypothesis cannot key its cache
        # on, rebuilt over the whole of Unicode for every string drawn
        "--generation-codec",
        "utf-8",
        "--workers",
        "1",
        "--request-timeout",
        "60",
        "--no-color",
    ]
    for path in only:
        args += ["--include-path", path]
    if not only:
        for path in (*ISOLATED, *UNFUZZED):
            args += ["--exclude-path", path]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "SCHEMATHESIS_HOOKS": "tests.schemathesis_hooks",
    }
    env.pop("SCHEMATHESIS_CONFIG", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import sys; from schemathesis.cli import schemathesis; sys.exit(schemathesis())",
        "run",
        *args,
        cwd=workdir,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode("utf-8", "replace")


async def fuzz(tmp_path: Path, pg_dsn: str, examples: int, *, as_player: bool) -> None:
    """On a server of its own: /healthz speaks for the whole server, and the shared
    session server may hold another test's table paused on purpose (a 503 there is
    the truth, not a failure of the document).  With the operator's token, and also a
    player's when ``as_player``."""
    dirs = [tmp_path / "operator", tmp_path / "player", tmp_path / "isolated"]
    for d in dirs:
        d.mkdir()
    async with server_of_its_own(pg_dsn, tmp_path / "own", "fz") as own:
        # a player on the server either way: the operator's run meets one (its token is
        # only fuzzed with ``as_player``)
        async with aiohttp.ClientSession() as s:
            body = {"name": "fuzzed", "deposit": 10_000}
            async with s.post(
                f"{own.url}/api/players", json=body, headers={"Authorization": f"Bearer {OPERATOR}"}
            ) as r:
                assert r.status == 201, await r.text()
                player = await r.json()
        tokens = (OPERATOR, player["token"]) if as_player else (OPERATOR,)
        runs = await asyncio.gather(
            *(schemathesis(own.url, t, examples, d) for t, d in zip(tokens, dirs, strict=False))
        )
        for code, report in runs:
            assert code == 0, report
        # no table the fuzzer made stays paused: /healthz comes back to 200 (a bound only a hang exceeds)
        async with aiohttp.ClientSession() as s:
            for _ in range(600):
                async with s.get(f"{own.url}/healthz") as r:
                    health = await r.json()
                if r.status == 200:
                    break
                await asyncio.sleep(0.2)
            assert r.status == 200 and health["status"] == "ok", health
        # last: they void hands and rotate the operator token
        code, report = await schemathesis(own.url, OPERATOR, examples, dirs[2], only=ISOLATED)
        assert code == 0, report


@pytest.mark.timeout(900)  # two fuzzing runs of ~1,000 requests each: on a busy machine, minutes
async def test_schemathesis_finds_nothing(tmp_path: Path, pg_dsn: str) -> None:
    await fuzz(tmp_path, pg_dsn, FAST_EXAMPLES, as_player=False)


@pytest.mark.drill
@pytest.mark.timeout(3600)
async def test_schemathesis_finds_nothing_in_a_long_run(tmp_path: Path, pg_dsn: str) -> None:
    await fuzz(tmp_path, pg_dsn, DRILL_EXAMPLES, as_player=True)


NAMES = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(" \u00a0\u0301\u036f\u20dd\u200d\u200c\u202e\u2066\u0085\u2028\U000e0001\U000f0000"),
    ),
    min_size=0,
    max_size=70,
)


@settings(max_examples=400)
@given(NAMES)
@example("a" + "\u0301" * 4)
@example("a" + "\u0301" * 5)
@example(" x")
@example("x\u3000")
@example("\U0010fffd")
def test_the_documented_name_pattern_is_the_servers_rule(name: str) -> None:
    """A name fits the document's pattern exactly when the server takes it."""
    takes = 1 <= len(name) <= 64 and name_problem(name) is None
    assert bool(NAME_RE.fullmatch(name)) == takes, name
    assert NAME_SCHEMA.is_valid(name) == takes, name  # the JSON Schema validator Schemathesis checks with
