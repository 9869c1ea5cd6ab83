"""Limits with clear errors: metadata documents too large or nested too deep, item and chunk
sizes past their limits, and reads too large to allocate. Each node is written by
``tests/hostile.py`` and opened in a process capped 32 MiB above its warm size, so an error
that came only after allocating the attack's size would fail there as a MemoryError."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.hostile import run_capped, write_hostile_metadata

OPEN = """
import json, zarrfs, zarrfs.engine as engine
g = zarrfs.open({root!r})
assert (g["good"][...] == 7).all()
cap(32 << 20)
try:
    node = g[{name!r}]
    {action}
except engine.ZarrfsError as exc:
    print(json.dumps({{"type": type(exc).__name__, "error": str(exc),
                      "nbytes": getattr(exc, "nbytes", None)}}))
else:
    sys.exit("no error")
"""

CASES = {
    # a node whose metadata cannot be used opens (as a broken node); its reads say why
    "huge_attrs": ("node[...]", "MetadataError", "larger than the 1.0 MiB"),
    "deep_codec": ("node[...]", "MetadataError", "nested more than 640 levels"),
    "deep_attrs": ("node[...]", "MetadataError", "nested more than 640 levels"),
    "void_2g": ("node[...]", "UnsupportedError", "ZARRFS_MAX_ITEMSIZE"),
    "bytes_1g": ("node[...]", "UnsupportedError", "ZARRFS_MAX_ITEMSIZE"),
    "big_chunks": ("node[0, 0]", "UnsupportedError", "ZARRFS_MAX_CHUNK_BYTES"),
    "vast": ("node[...]", "ReadTooLargeError", "8,000,000,000,000,000,000,000,000 bytes"),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return write_hostile_metadata(tmp_path_factory.mktemp("limits") / "h.zarr")


@pytest.mark.parametrize("name", sorted(CASES))
def test_limits_are_errors_before_allocating(hostile, name):
    action, kind, words = CASES[name]
    code = OPEN.format(root=str(hostile), name=name, action=action)
    result = json.loads(
        run_capped(code, timeout=60, env={"ZARRFS_MAX_METADATA_BYTES": "1M"}).strip()
    )
    assert result["type"] == kind and words in result["error"], result
    if name == "vast":
        assert result["nbytes"] == 10**24 * 8


def test_the_vast_array_costs_what_its_metadata_costs(hostile):
    """Its chunk grid has 10**18 chunks: describing it, and reading one element, is cheap."""
    out = run_capped(
        f"""
        import zarrfs
        cap(32 << 20)
        a = zarrfs.open({str(hostile / "vast")!r})
        print(a.shape, a.chunk_grid_shape, a[123456789, 10**12 - 1], a.nbytes)
        """
    )
    assert out.split()[-2:] == ["0.0", str(8 * 10**24)]


@pytest.mark.parametrize("name", ["deep_codec", "huge_attrs", "void_2g"])
def test_the_cli_says_one_line(hostile, name):
    proc = subprocess.run(
        [sys.executable, "-m", "zarrfs.cli", "info", str(hostile / name)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ZARRFS_MAX_METADATA_BYTES": "1M"},
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("zarrfs: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr
