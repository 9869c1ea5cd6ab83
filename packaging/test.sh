#!/usr/bin/env bash
# Set up (packaging/setup.sh) and run the whole test suite: engine, conformance corpus, real FUSE
# mounts, loopback HTTP and S3 servers, the Qt viewer offscreen. Extra arguments go to pytest.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo/packaging/setup.sh"
cd "$repo"
export QT_QPA_PLATFORM=offscreen FUSE_LIBRARY_NAME=fuse3

# Checks before the tests: lint, then formatting (the tree is ruff-format clean; keep it so).
"${ZARRFS_VENV:-$repo/.venv}/bin/python" -m ruff check .
"${ZARRFS_VENV:-$repo/.venv}/bin/python" -m ruff format --check .

exec "${ZARRFS_VENV:-$repo/.venv}/bin/python" -m pytest -q -p no:cacheprovider "$@"
