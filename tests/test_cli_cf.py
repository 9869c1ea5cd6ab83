"""``zarrfs info`` shows the CF view of a variable, also when the array is opened by its own
URL (its coordinates are then found in the group above), as text and as JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.cf_stores import write_xarray

pytest.importorskip("xarray")


def _info(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "zarrfs.cli", "info", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_info_of_an_array_by_its_own_url(tmp_path):
    url = write_xarray(tmp_path / "c.zarr", zarr_format=2, calendar="360_day")
    text = _info(str(url / "tas"))
    assert "long name      air temperature" in text
    assert "time (24): 2000-01-01 .. 2000-03-10 (360_day)" in text
    assert "lat (18): -89.5 .. 89.5 degrees_north" in text
    assert "stored * 0.01 + 273.15 -> float64" in text
    assert "-32768 (stored values)" in text
    cf = json.loads(_info(str(url / "time"), "--json"))["cf"]
    assert cf["time"] == {
        "calendar": "360_day",
        "units": "days since 2000-01-01",
        "first": "2000-01-01",
        "last": "2000-03-10",
    }


def test_dimension_names_alone_are_no_cf_view(tmp_path):
    """An array with dimension names but neither CF attributes nor coordinate variables (the
    demo's phantom volume: z, y, x) shows them once, in "dimensions", with no CF block."""
    from pathlib import Path

    demo = (
        Path(__file__).resolve().parent.parent / "resources" / "demo.zarr" / "volumes" / "phantom"
    )
    out = _info(str(demo))
    assert [
        line.split(None, 1)[1] for line in out.splitlines() if line.startswith("dimensions")
    ] == ["z, y, x"]
    assert "CF" not in out
