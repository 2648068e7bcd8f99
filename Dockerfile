# loom-fs-mcp over Streamable HTTP, mirroring start_http.sh.
# In a container the server must bind 0.0.0.0, which the bind guard only allows with
# --allow-remote AND a token you configure (a token the server would make does not count):
# pass LOOMFS_TOKEN, or mount a secret file and point LOOMFS_TOKEN_FILE at it (read again
# at every reload: rotate it, then `docker kill -s HUP <container>`).
# Mount roots as volumes (read-only for `reference` roots) and a roots.toml naming them:
#   docker run -p 127.0.0.1:8000:8000 -e LOOMFS_TOKEN="$(cat ~/.loomfs-token)" \
#     -v ~/docs:/roots/docs:ro -v ./roots.toml:/config/roots.toml:ro loom-fs-mcp
# or, with a file:
#   docker run ... -v ~/.loomfs-token:/run/secrets/loomfs-token:ro \
#     -e LOOMFS_TOKEN_FILE=/run/secrets/loomfs-token loom-fs-mcp
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    LOOMFS_CONFIG=/config/roots.toml \
    XDG_STATE_HOME=/state

RUN useradd --create-home --uid 10001 loom \
    && mkdir -p /config /state /roots \
    && chown 10001:10001 /state

WORKDIR /app
COPY pyproject.toml README.md ./
COPY app ./app
RUN pip install --no-cache-dir .

USER 10001:10001
EXPOSE 8000
VOLUME ["/config", "/state"]
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status == 200 else 1)"]
ENTRYPOINT ["loom-fs-mcp", "--transport", "http", "--host", "0.0.0.0", "--port", "8000", "--allow-remote"]
