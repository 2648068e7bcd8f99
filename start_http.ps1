# Set up (first run) and serve loom-fs-mcp over Streamable HTTP on 127.0.0.1:8000.
# Mirrors start_http.sh: creates .venv, installs, creates config\roots.toml from the
# example if missing, then runs the HTTP server. Extra arguments pass through.
# /mcp needs a bearer token: with neither LOOMFS_TOKEN nor LOOMFS_TOKEN_FILE set, the first
# start makes one in the state folder (XDG_STATE_HOME, else ~/.local/state, then
# loom-fs-mcp\token) and prints where it is; -- --no-auth serves without one (loopback only).
$ErrorActionPreference = "Stop"
Set-Location -Path $PSScriptRoot

$python = if ($env:PYTHON) { $env:PYTHON } else { "python" }
$exe = Join-Path ".venv" "Scripts\loom-fs-mcp.exe"
if (-not (Test-Path $exe)) {
    if (-not (Test-Path (Join-Path ".venv" "Scripts\python.exe"))) {
        & $python -m venv .venv
    }
    & .venv\Scripts\python.exe -m pip install -q --disable-pip-version-check --upgrade pip | Out-Null
    & .venv\Scripts\python.exe -m pip install -q --disable-pip-version-check -e .
}

$config = if ($env:LOOMFS_CONFIG) { $env:LOOMFS_CONFIG } else { "config\roots.toml" }
if (-not (Test-Path $config)) {
    Copy-Item "config\roots.example.toml" $config
    Write-Error "created $config from config\roots.example.toml; edit it to declare your roots" -ErrorAction Continue
}

& $exe --transport http --config $config @args
exit $LASTEXITCODE
