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

# The program as users install it: the sdist and wheel built, the wheel installed into a fresh
# venv and with pipx, and run from there (packaging/check_install.py, about 4 minutes). With the
# whole suite only: arguments to pytest mean a developer is running part of it.
if [ $# -eq 0 ]; then
    "${ZARRFS_VENV:-$repo/.venv}/bin/python" "$repo/packaging/check_install.py"
fi

exec "${ZARRFS_VENV:-$repo/.venv}/bin/python" -m pytest -q -p no:cacheprovider "$@"
