"""coordinate_ticks (pure): degree axes tick at round degree steps, at least four to a map."""

from __future__ import annotations

import numpy as np
import pytest

from zarrfs.viewer.coordinate_ticks import MIN_DEGREE_TICKS, number_ticks, ticks
from zarrfs.viewer.coordinates import AxisCoordinate


def _axis(kind: str, numbers) -> AxisCoordinate:
    numbers = np.asarray(numbers, dtype=np.float64)
    return AxisCoordinate(
        name=kind[:3], kind=kind, units="degrees", numbers=numbers, values=numbers
    )


@pytest.mark.parametrize("count", [2, 3, 4, 7])
def test_a_whole_0_360_longitude_axis_ticks_at_round_degrees(count):
    """The axis that once read "0°, 160°W": a 1.25° global grid on a narrow axis (count 2)."""
    lon = _axis("longitude", np.arange(288) * 1.25)
    found = ticks(lon, 0, lon.size, count)
    texts = [text for _, text in found]
    assert len(found) >= MIN_DEGREE_TICKS
    values = [lon.number_at(position) for position, _ in found]
    step = values[1] - values[0]
    assert step in (15, 30, 45, 90)
    assert np.allclose(np.diff(values), step) and values[0] == 0
    assert "160°W" not in texts
    if step == 90:
        assert texts == ["0°", "90°E", "180°", "90°W"]
    # each tick sits at its element's centre: element k holds 1.25 * k
    assert [p for p, _ in found] == pytest.approx([v / 1.25 + 0.5 for v in values])


def test_latitudes_and_small_spans():
    assert [t for _, t in number_ticks("latitude", -90, 90, 2)] == [
        "90°S",
        "45°S",
        "0°",
        "45°N",
        "90°N",
    ]
    assert [t for _, t in number_ticks("longitude", -180, 180, 2)] == [
        "180°",
        "90°W",
        "0°",
        "90°E",
        "180°",
    ]
    # a zoomed view of two degrees still gets at least four ticks, at half degrees
    assert [t for _, t in number_ticks("latitude", 10, 12, 2)] == [
        "10.0°N",
        "10.5°N",
        "11.0°N",
        "11.5°N",
        "12.0°N",
    ]
    # numbers other than degrees keep the count they were asked for
    assert [t for _, t in number_ticks("number", 0, 1000, 2)] == ["0", "500", "1000"]
