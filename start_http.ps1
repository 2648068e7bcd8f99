# Serve loom-fs-mcp over Streamable HTTP from Windows, through WSL2.
# The server does not run natively on Windows: its confinement needs the dir_fd/O_NOFOLLOW
# system calls, and it refuses to serve rather than fall back to path-string checks. With WSL
# and a Linux distribution installed, this runs start_http.sh there, in this folder (seen from
# Linux under /mnt/...); WSL2 forwards localhost, so Windows clients reach the server at
# http://localhost:8000/mcp. Without WSL it says how to get it. Extra arguments pass through
# to start_http.sh (e.g. --port 8001). See docs/clients.md, "Windows (WSL2)".
$ErrorActionPreference = "Stop"
Set-Location -Path $PSScriptRoot

function Test-Wsl {
    # A distribution that starts: wsl.exe alone exists on Windows without any installed.
    if (-not (Get-Command wsl.exe -ErrorAction SilentlyContinue)) { return $false }
    $saved = $ErrorActionPreference
    $ErrorActionPreference = "Continue"  # stderr of a native command must not throw here
    try {
        & wsl.exe -e true *> $null
        return $LASTEXITCODE -eq 0
    } finally {
        $ErrorActionPreference = $saved
    }
}

if (-not (Test-Wsl)) {
    [Console]::Error.WriteLine(@"
start_http.ps1: loom-fs-mcp runs on Windows inside WSL2, and no WSL distribution starts here.
  1. Install it, in PowerShell as administrator: wsl --install   (then restart; Ubuntu by default)
  2. In the Linux shell: sudo apt install python3-venv
  3. Run this script again (it runs start_http.sh in WSL, in this folder), or, faster,
     clone the repository into your Linux home and run ./start_http.sh there.
See docs/clients.md, "Windows (WSL2)".
"@)
    exit 1
}

# bash reads the script itself, so it needs no executable bit on the Windows drive.
& wsl.exe -e bash ./start_http.sh @args
exit $LASTEXITCODE
