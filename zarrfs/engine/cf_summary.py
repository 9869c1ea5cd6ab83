"""The CF view of an array as ``zarrfs info`` shows it: a JSON-friendly dict and text rows.

Dimensions with their coordinate ranges (two elements of each coordinate read), units, packing,
fill, and for a time variable its span in dates. Reading a coordinate that fails leaves its range
out: a summary never fails for a neighbour's sake.
"""

from __future__ import annotations

import logging

from . import cf
from .errors import ZarrfsError

log = logging.getLogger(__name__)


def cf_summary(array, group=None) -> dict | None:
    """The CF part of ``summary(array)``; None for an array that says nothing CF or xarray
    understand (no CF attributes, and no coordinate variable for any of its dimensions:
    dimension names alone are in the summary already)."""
    var = cf.variable(array)
    attributes = var.encoded or var.units or var.long_name or var.standard_name or var.problems
    if not (attributes or array.dimension_names):
        return None
    group = group if group is not None else array.parent
    coords = cf.coordinate_arrays(group, var.dimensions)
    if not attributes and not any(coords.get(name) is not None for name in var.dimensions):
        return None
    out: dict = {
        "long_name": var.long_name,
        "standard_name": var.standard_name,
        "units": var.units,
        "dimensions": [
            _dimension(name, size, coords.get(name))
            for name, size in zip(var.dimensions, array.shape, strict=True)
        ],
        "coordinates": list(var.coordinates),
    }
    if var.packing is not None:
        out["packing"] = {
            "scale_factor": var.packing.scale_factor,
            "add_offset": var.packing.add_offset,
            "decoded_dtype": str(var.decoded_dtype),
        }
    if var.masking is not None:
        out["fill"] = [_number(v) for v in var.masking.fill_values]
        if var.masking.valid_min is not None or var.masking.valid_max is not None:
            out["valid_range"] = [var.masking.valid_min, var.masking.valid_max]
    if var.time is not None and array.ndim == 1:
        ends = _ends(array)
        out["time"] = {"calendar": var.time.calendar, "units": var.time.units, **ends}
    placed = array.ndim >= 2 and all(coords.get(d) is not None for d in var.dimensions[-2:])
    if placed or "grid_mapping" in array.attrs or "_CRS" in array.attrs:
        out["georeference"] = _georeference(array, group)
    if var.problems:
        out["problems"] = list(var.problems)
    return out


def _georeference(array, group) -> dict:
    """Where the ``.tif`` of a plane lies (``cf.georeference``), or why it has no place."""
    try:
        geo = cf.georeference(array, group=group)
    except ZarrfsError as exc:
        return {"none": f"cannot be read: {exc.message}"}
    if isinstance(geo, cf.NoGeoreference):
        return {"none": geo.reason}
    out: dict = {"transform": list(geo.gdal_transform)}
    out["crs"] = geo.crs.describe() if geo.crs is not None else None
    if geo.note:
        out["note"] = geo.note
    return out


def _number(value):
    return "NaN" if isinstance(value, float) and value != value else value


def _ends(array) -> dict:
    try:
        coord = cf.coordinate(array)
    except ZarrfsError as exc:
        log.info("cannot read the range of %s: %s", array.path, exc)
        return {}
    return {"first": cf.format_value(coord.first), "last": cf.format_value(coord.last)}


def _dimension(name: str, size: int, coordinate) -> dict:
    out: dict = {"name": name, "size": size}
    if coordinate is not None:
        var = cf.variable(coordinate)
        out.update(coordinate=coordinate.name, units=var.units, **_ends(coordinate))
        if var.time is not None:
            out["calendar"] = var.time.calendar
    return out


def cf_rows(s: dict) -> list[tuple[str, str]]:
    """The CF dict as ``(key, text)`` rows of ``format_summary``."""
    rows: list[tuple[str, str]] = []
    for key in ("long_name", "standard_name", "units"):
        if s.get(key):
            rows.append((key.replace("_", " "), s[key]))
    rows.append(("CF dimensions", "\n".join(_dimension_text(d) for d in s["dimensions"])))
    if s.get("coordinates"):
        rows.append(("coordinates", ", ".join(s["coordinates"])))
    packing = s.get("packing")
    if packing:
        text = "stored"
        if packing["scale_factor"] is not None:
            text += f" * {packing['scale_factor']:g}"
        if packing["add_offset"] is not None:
            text += f" + {packing['add_offset']:g}"
        rows.append(("packing", f"{text} -> {packing['decoded_dtype']}"))
    if s.get("fill"):
        rows.append(("missing", ", ".join(str(v) for v in s["fill"]) + " (stored values)"))
    if s.get("valid_range"):
        low, high = s["valid_range"]
        rows.append(
            ("valid range", f"{'' if low is None else low} .. {'' if high is None else high}")
        )
    if s.get("time"):
        t = s["time"]
        span = f"{t['first']} .. {t['last']}, " if "first" in t else ""
        rows.append(("time span", f"{span}{t['units']} ({t['calendar']} calendar)"))
    geo = s.get("georeference")
    if geo:
        rows.append(("georeference", _georeference_text(geo)))
    for problem in s.get("problems", []):
        rows.append(("CF problem", problem))
    return rows


def _georeference_text(geo: dict) -> str:
    if "none" in geo:
        return f"none in .tif files: {geo['none']}"
    x0, dx, _, y0, _, dy = geo["transform"]
    crs = geo["crs"] or f"no CRS ({geo.get('note')})"
    return f"{crs}; corner {x0:.10g}, {y0:.10g}; cells {dx:.10g} x {dy:.10g}"


def _dimension_text(d: dict) -> str:
    text = f"{d['name']} ({d['size']})"
    if d.get("coordinate") and "first" in d:
        text += f": {d['first']} .. {d['last']}"
        if d.get("calendar"):
            text += f" ({d['calendar']})"
        elif d.get("units"):
            text += f" {d['units']}"
    return text
