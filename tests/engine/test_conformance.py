"""The conformance corpus (tests/conformance), read by the engine through its public API, must pass in full
(arrays, selections, and group members/attributes via --meta-fn)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize(
    ("native", "loop"), [("1", "1"), ("0", "1"), ("0", "0")], ids=["native", "python", "reference"]
)
def test_conformance_corpus_passes_in_full(corpus_dir, native, loop):
    """Every read path: tensorstore where it reads an array (``ZARRFS_NATIVE=1``, the
    default), the Python pipeline for every array (``ZARRFS_NATIVE=0``) with its compiled
    chunk loop, and without it (``ZARRFS_CHUNKLOOP=0``: every chunk in Python)."""
    reader = HERE / "conformance_reader.py"
    proc = subprocess.run(
        [
            sys.executable,
            str(corpus_dir / "check_reader.py"),
            f"{reader}:read",
            "--meta-fn",
            f"{reader}:meta",
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=HERE.parents[1],
        env={**os.environ, "ZARRFS_NATIVE": native, "ZARRFS_CHUNKLOOP": loop},
    )
    tail = proc.stdout.strip().splitlines()[-1]
    match = re.fullmatch(r"(\d+) passed, (\d+) failed", tail)
    assert match, proc.stdout[-3000:] + proc.stderr[-3000:]
    passed, failed = map(int, match.groups())
    assert failed == 0, proc.stdout[-5000:]
    assert passed >= 2400  # every array, selection and group of the corpus
    assert proc.returncode == 0
