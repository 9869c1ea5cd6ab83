#!/usr/bin/env bash
# Set up a development environment on Debian (12 or newer) in .venv beside this repository:
# system packages (Python, FUSE 3, the libraries Qt needs even offscreen), then zarrfs with every
# extra. Safe to run again: it skips what is already there. Used by demo.sh, test.sh and CI.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${ZARRFS_VENV:-$repo/.venv}"

# desktop-file-utils: the tests validate the desktop entry `zarrfs desktop install` writes.
# gcc, libc6-dev: the Python pipeline's compiled chunk loop (zarrfs/engine/_chunkloop.c)
apt_packages=(python3 python3-venv python3-dev gcc libc6-dev fuse3 libfuse3-3 libgl1 libegl1 libglib2.0-0
              libfontconfig1 libdbus-1-3 libxkbcommon0 libxkbcommon-x11-0 libxcb-cursor0
              netcdf-bin desktop-file-utils)
# netcdf-bin: ncgen/nccopy write the NCZarr stores of the tests; desktop-file-utils: the desktop
# entry's tests validate it
# nodejs, npm: Azurite, the Azure Blob Storage emulator of the tests (where no node is on PATH)
command -v npm >/dev/null 2>&1 || apt_packages+=(nodejs npm)
missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "setup: installing system packages: ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -x "$venv/bin/python" ]; then
    echo "setup: creating $venv" >&2
    python3 -m venv "$venv"
fi
stamp="$venv/.zarrfs-installed"
# (again when the compiled chunk loop's source changed, or its build is gone)
built=("$repo"/zarrfs/engine/_chunkloop.*.so)
if [ ! -f "$stamp" ] || [ "$repo/pyproject.toml" -nt "$stamp" ] \
        || [ "$repo/packaging/constraints.txt" -nt "$stamp" ] \
        || [ "$repo/zarrfs/engine/_chunkloop.c" -nt "$stamp" ] || [ ! -e "${built[0]}" ]; then
    echo "setup: installing zarrfs[dev] into $venv (a few minutes the first time)" >&2
    "$venv/bin/python" -m pip install -q --upgrade pip
    # constraints.txt: the versions the suite last passed with (a fast, repeatable resolve)
    "$venv/bin/python" -m pip install -q -c "$repo/packaging/constraints.txt" -e "$repo[dev]"
    touch "$stamp"
fi

# Azurite (Azure Blob Storage's emulator) for the Azure tests, beside the repository in .node/
# (tests/azurite.py looks there); pinned: 3.35 asks for Node >= 10 (later ones for Node 22)
azurite_version=3.35.0
if [ ! -x "$repo/.node/node_modules/.bin/azurite-blob" ] \
        || ! grep -q "\"version\": \"$azurite_version\"" "$repo/.node/node_modules/azurite/package.json"; then
    echo "setup: installing azurite $azurite_version into $repo/.node" >&2
    npm install --prefix "$repo/.node" --no-audit --no-fund --loglevel=error "azurite@$azurite_version"
fi
