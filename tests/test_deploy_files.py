"""The Dockerfile, compose.yaml and the systemd unit, checked statically (there is no
docker or systemd to run them here): their commands are ``rummy-table`` commands the
CLI accepts, the environment they give is what the server reads, the Dockerfile
installs as the README says, and they agree with the command docs/deploy.md tests."""

from __future__ import annotations

import ast
import configparser
import json
import re
import shlex
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from service import cli
from tests.deploydoc import ROOT, blocks

UNIT = ROOT / "docs" / "deploy" / "rummy-table.service"
ENV_FILE = ROOT / "docs" / "deploy" / "rummy-table.env"


def server_env_names() -> set[str]:
    """Every environment variable service/ reads (``os.environ.get``, ``os.getenv``,
    ``os.environ[...]``), by name or by a module constant that holds the name (a
    constant of any of service/'s modules, as they import them from each other)."""
    trees = [ast.parse(path.read_text(encoding="utf-8")) for path in (ROOT / "service").rglob("*.py")]
    consts: dict[str, str] = {}
    for tree in trees:
        for n in tree.body:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
            value = n.value if isinstance(n, ast.Assign | ast.AnnAssign) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                consts.update((t.id, value.value) for t in targets if isinstance(t, ast.Name))

    def name_of(node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return consts.get(node.id) if isinstance(node, ast.Name) else None

    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            key: ast.expr | None = None
            if isinstance(node, ast.Call) and node.args:
                f = ast.unparse(node.func)
                if f in ("os.environ.get", "os.getenv"):
                    key = node.args[0]
            elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
                key = node.slice
            if key is not None and (found := name_of(key)) is not None:
                names.add(found)
    return names


def accepted(argv: list[str]) -> object:
    """The parsed arguments, as ``rummy-table`` would parse them (failing the test
    where the CLI would exit 2)."""
    assert Path(argv[0]).name == "rummy-table", argv
    try:
        return cli.parse_args(argv[1:])
    except SystemExit as e:
        pytest.fail(f"rummy-table refuses {shlex.join(argv)} (exit {e.code})")


def documented_serve() -> list[str]:
    """docs/deploy.md's tested command for a server behind the proxy."""
    (line,) = [x for x in blocks("proxy") if x.startswith("rummy-table serve")]
    return shlex.split(line)


def test_the_server_reads_the_names_the_recipes_give() -> None:
    assert {"DATABASE_URL", "RUMMY_OPERATOR_TOKEN"} <= server_env_names()


def test_the_systemd_unit_runs_the_documented_command() -> None:
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(UNIT.read_text(encoding="utf-8"))
    service = unit["Service"]
    argv = shlex.split(service["ExecStart"])
    assert Path(argv[0]).is_absolute(), "systemd needs the program's absolute path"
    args = accepted(argv)
    assert getattr(args, "command", None) == "serve"
    assert ["rummy-table", *argv[1:]] == documented_serve(), "the unit runs what docs/deploy.md tests"
    assert getattr(args, "data_dir", None) == f"/var/lib/{service['StateDirectory']}"
    assert service["KillSignal"] == "SIGTERM"
    refusals = {int(x) for x in service["RestartPreventExitStatus"].split()}
    assert refusals == {cli.EXIT_USAGE, cli.EXIT_REFUSED, cli.EXIT_LOCKED, cli.EXIT_CAPACITY}
    assert service["EnvironmentFile"] == "/etc/rummy-table/env"
    given = {
        line.split("=", 1)[0]
        for line in ENV_FILE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert given and given <= server_env_names(), given - server_env_names()
    assert unit["Install"]["WantedBy"] == "multi-user.target"


def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions: (INSTRUCTION, arguments), continuations joined."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / "Dockerfile").read_text(encoding="utf-8"))
    out = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_the_dockerfile_installs_as_the_readme_says_and_runs_a_command_the_cli_accepts() -> None:
    steps = dockerfile()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (install,) = re.findall(r"^    (pip install \.) && rummy-table serve$", readme, re.M)
    assert ("RUN", install) in steps, f"the Dockerfile should RUN the README's {install!r}"
    # everything the install reads is copied in: pyproject.toml, its readme, every package's top folder
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setup = project["tool"]["setuptools"]
    needed = {"pyproject.toml", project["project"]["readme"]}
    needed |= {p.split(".")[0] for p in setup["packages"] if p not in setup.get("package-dir", {})}
    needed |= set(setup.get("package-dir", {}).values())
    copied = {src for word, rest in steps if word == "COPY" for src in rest.split()[:-1]}
    assert needed <= copied, needed - copied
    (cmd,) = [rest for word, rest in steps if word == "CMD"]
    argv = json.loads(cmd)
    args = accepted(argv)
    assert getattr(args, "command", None) == "serve"
    (volume,) = [json.loads(rest) for word, rest in steps if word == "VOLUME"]
    assert volume == [getattr(args, "data_dir", None)], "the keys are kept in the volume"
    assert ("EXPOSE", str(getattr(args, "port", None))) in steps
    assert ("STOPSIGNAL", "SIGTERM") in steps
    users = [rest for word, rest in steps if word == "USER"]
    assert users and users[-1] not in ("root", "0"), "the server does not run as root"


def test_the_compose_file_gives_the_server_what_it_reads_and_a_database_it_can_reach() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    services = compose["services"]
    server, db = services["server"], services["db"]
    assert server["build"] == ".", "the server is built from the Dockerfile"
    env = server["environment"]
    assert set(env) <= server_env_names(), set(env) - server_env_names()
    url = urlsplit(env["DATABASE_URL"])
    assert url.scheme == "postgresql" and url.hostname in services and url.hostname == "db"
    assert url.username == db["environment"]["POSTGRES_USER"]
    assert url.path == "/" + db["environment"]["POSTGRES_DB"]
    # one password, from the operator's environment, for the database and the server's URL
    assert url.password == "${POSTGRES_PASSWORD}"
    assert db["environment"]["POSTGRES_PASSWORD"].startswith("${POSTGRES_PASSWORD:?")
    assert server["depends_on"]["db"]["condition"] == "service_healthy" and "healthcheck" in db
    steps = dockerfile()
    argv = json.loads(next(rest for word, rest in steps if word == "CMD"))
    args = accepted(argv)
    published = {p.rsplit(":", 1)[-1] for p in server["ports"]}
    assert published == {str(getattr(args, "port", None))}
    assert all(p.startswith("127.0.0.1:") for p in server["ports"]), "published on the loopback: nginx in front"
    mounts = {v.split(":", 1)[1] for v in server["volumes"]}
    assert getattr(args, "data_dir", None) in mounts, "the key files outlive the container"
    assert server["stop_signal"] == "SIGTERM"
