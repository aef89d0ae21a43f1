# rummy-table: the table server (docs/deploy.md, "Docker").  compose.yaml runs it beside
# a PostgreSQL; DATABASE_URL and RUMMY_OPERATOR_TOKEN come from the environment.
FROM python:3.11-slim

WORKDIR /src
COPY pyproject.toml README.md ./
COPY service ./service
COPY verifier ./verifier
COPY sql ./sql
# The README's install command (tests/test_deploy_files.py checks it is the same).
RUN pip install .

RUN useradd --system --create-home --home-dir /data rummy
USER rummy
WORKDIR /data
# The card room's two key files live here: keep the volume, back it up.
VOLUME ["/data"]
EXPOSE 8080
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=2)"]
# One worker per core (the default), all on the one published port (docs/deploy.md).
CMD ["rummy-table", "serve", "--host", "0.0.0.0", "--port", "8080", "--data-dir", "/data"]
