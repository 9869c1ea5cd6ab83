"""Where a plane of a CF variable lies on the Earth: its geotransform and coordinate reference
system, or the reason it has none.

The geotransform comes from the 1-D coordinate variables of the plane's two axes (CF 5), which
hold the *centres* of the cells: a regular axis (every value within a relative tolerance of a
straight line) gives the outer edge of its first cell and the spacing; an irregular one (a
Gaussian grid, a stretched vertical) gives none, rather than a wrong one.

The CRS, first found wins:

1. the variable's ``grid_mapping`` (CF 5.6): its ``crs_wkt`` (CF 1.7), its ``spatial_ref`` (GDAL
   and rioxarray), else its parameters (``grid_mapping_name`` and the rest, CF appendix F),
   rendered here as WKT 1 for the common projections;
2. GDAL's own Zarr attribute ``_CRS`` (``wkt``, ``url``), written by GDAL's Zarr driver;
3. EPSG:4326 when the axes are latitude and longitude (``cf_axes``).

An EPSG code is taken from the outermost ``ID``/``AUTHORITY`` of a WKT (or a ``_CRS`` URL), so
that a reader gets the registered CRS; other CRSs travel as their WKT.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from . import cf_axes
from .errors import ZarrfsError

#: a coordinate is regular when each value is within this fraction of the spacing of the
#: straight line through its first and last values
RELATIVE_TOLERANCE = 1e-4
#: the longest coordinate read whole to check that it is regular (128 MiB of float64)
MAX_COORDINATE = 1 << 24
_WGS84 = (6378137.0, 298.257223563)
_EPSG_TAIL = re.compile(r'(?:ID|AUTHORITY)\[\s*"EPSG"\s*,\s*"?(\d+)"?\s*\]\s*\]\s*$', re.I)
_EPSG_URL = re.compile(r"EPSG/\d+/(\d+)\s*$|EPSG:+(\d+)\s*$", re.I)
_METRES = {"m": 1.0, "metre": 1.0, "meter": 1.0, "metres": 1.0, "meters": 1.0, "km": 1000.0}


@dataclass(frozen=True)
class CRS:
    """A coordinate reference system: an EPSG code, its WKT, or both."""

    epsg: int | None
    wkt: str | None
    geographic: bool
    source: str  # where it was found, for ``info.txt``

    def describe(self) -> str:
        """``EPSG:4326 (from latitude/longitude coordinates)``, or the WKT's name."""
        return f"{f'EPSG:{self.epsg}' if self.epsg else _wkt_name(self.wkt or '')} (from {self.source})"


@dataclass(frozen=True)
class Georeference:
    """Pixel (column, row) -> ``(x0 + column * dx, y0 + row * dy)``, the outer corner of pixel
    (0, 0) at ``(x0, y0)`` (GDAL's geotransform without rotation)."""

    x0: float
    dx: float
    y0: float
    dy: float
    crs: CRS | None
    note: str | None = None  # why the CRS is missing, when it is

    @property
    def gdal_transform(self) -> tuple[float, ...]:
        return (self.x0, self.dx, 0.0, self.y0, 0.0, self.dy)


@dataclass(frozen=True)
class NoGeoreference:
    reason: str


def georeference(array, dims: tuple[str, str], coordinates: dict, window=None, group=None):
    """The :class:`Georeference` of the planes of ``array`` whose rows and columns run along
    ``dims``, or a :class:`NoGeoreference` saying why there is none (``cf.georeference`` finds
    the parts). ``coordinates``: ``{dimension: (cf.Variable, read)}`` for the dimensions that
    have a coordinate variable, ``read()`` its decoded values; ``window``: the two slices a
    selection keeps, else the whole plane; ``group``: where a ``grid_mapping`` variable is
    looked up."""
    missing = [d for d in dims if d not in coordinates]
    if missing:
        return NoGeoreference(f"no coordinate variable for {', '.join(missing)}")
    variables = [coordinates[d][0] for d in dims]
    kinds = [cf_axes.axis_kind(d, v) for d, v in zip(dims, variables, strict=True)]
    if kinds[0] in (cf_axes.LONGITUDE, cf_axes.GRID_X) or kinds[1] in (
        cf_axes.LATITUDE,
        cf_axes.GRID_Y,
    ):
        return NoGeoreference(f"rows run along {dims[0]} and columns along {dims[1]} (transposed)")
    if {cf_axes.TIME, cf_axes.VERTICAL} & set(kinds):
        return NoGeoreference(f"the plane runs along {dims[0]} and {dims[1]}, not over a map")
    crs, note = _find_crs(array, kinds, group)
    if crs is None and note is not None:
        return NoGeoreference(note)
    edges = []
    for k, dim in enumerate(dims):
        try:
            values = _values(coordinates[dim][1], None if window is None else window[k])
        except (ZarrfsError, TypeError, ValueError) as exc:
            return NoGeoreference(f"coordinate {dim} cannot be read: {exc}")
        spacing = _spacing(dim, values)
        if isinstance(spacing, str):
            return NoGeoreference(spacing)
        projected = crs is not None and not crs.geographic
        factor = _METRES.get((variables[k].units or "").strip().lower(), 1.0) if projected else 1.0
        edges.append((float(values[0] - spacing / 2) * factor, spacing * factor))
    (y0, dy), (x0, dx) = edges
    return Georeference(x0, dx, y0, dy, crs, None if crs else "no grid_mapping or _CRS names a CRS")


def _values(read, part) -> np.ndarray:
    values = np.asarray(read())
    if values.dtype.kind not in "iuf":
        raise TypeError(f"its values are {values.dtype}, not positions")
    values = values.astype(np.float64)
    return values if part is None else values[part]


def _spacing(dim: str, values: np.ndarray) -> float | str:
    """The spacing of a regular coordinate, or why it has none."""
    if values.size < 2:
        return f"{dim} has {values.size} value(s): no spacing"
    if not np.all(np.isfinite(values)):
        return f"{dim} has missing or infinite values"
    step = (values[-1] - values[0]) / (values.size - 1)
    if step == 0:
        return f"{dim} does not change"
    line = values[0] + step * np.arange(values.size)
    worst = float(np.max(np.abs(values - line)))
    eps = np.finfo(np.float32).eps * float(np.max(np.abs(values)))  # float32 coordinates
    if worst > max(RELATIVE_TOLERANCE * abs(step), 4 * eps):
        steps = np.diff(values)
        return (
            f"{dim} is not regular: its spacing runs from {float(steps.min()):.6g} to "
            f"{float(steps.max()):.6g} (more than {RELATIVE_TOLERANCE:.0e} of the spacing)"
        )
    return float(step)


# -- the CRS ---------------------------------------------------------------------------------
def _find_crs(array, kinds, group) -> tuple[CRS | None, str | None]:
    """The CRS and None; or None and why there is no georeference; or None, None: a projected
    grid without a CRS (a geotransform alone)."""
    geographic = kinds == [cf_axes.LATITUDE, cf_axes.LONGITUDE]
    crs = _grid_mapping_crs(array, group) or _gdal_crs(array.attrs.get("_CRS"))
    if crs is not None:
        return crs, None
    if geographic:
        return CRS(4326, None, True, "latitude/longitude coordinates"), None
    if kinds == [cf_axes.GRID_Y, cf_axes.GRID_X]:
        return None, None
    return None, "the axes are not latitude/longitude and no grid_mapping or _CRS names a CRS"


def _grid_mapping_crs(array, parent) -> CRS | None:
    name = array.attrs.get("grid_mapping")
    if not isinstance(name, str) or not name.strip() or parent is None:
        return None
    name = name.split(":")[0].split()[0]  # CF 1.7's "crs: x y" form names one mapping first
    try:
        node = parent[name]
    except (ZarrfsError, KeyError):
        return None
    attrs = getattr(node, "attrs", None) or {}
    where = f"grid_mapping {name}"
    for key in ("crs_wkt", "spatial_ref"):
        if isinstance(attrs.get(key), str) and attrs[key].strip():
            return _from_wkt(attrs[key].strip(), f"{where} {key}")
    wkt = cf_wkt(attrs)
    return _from_wkt(wkt, f"{where} parameters") if wkt else None


def _gdal_crs(value) -> CRS | None:
    if not isinstance(value, dict):
        return None
    wkt = value.get("wkt")
    if isinstance(wkt, str) and wkt.strip():
        return _from_wkt(wkt.strip(), "_CRS")
    url = value.get("url")
    match = _EPSG_URL.search(url) if isinstance(url, str) else None
    if match:
        code = int(match.group(1) or match.group(2))
        return CRS(code, None, code in _GEOGRAPHIC_CODES, "_CRS url")
    return None


_GEOGRAPHIC_CODES = {4326, 4258, 4269, 4267, 4230, 4283, 4617}


def _from_wkt(wkt: str, source: str) -> CRS:
    match = _EPSG_TAIL.search(wkt[-200:])  # the outermost ID closes the text
    head = wkt.lstrip().split("[", 1)[0].strip().upper()
    geographic = head in ("GEOGCS", "GEOGCRS", "GEODCRS", "GEOGRAPHICCRS")
    return CRS(int(match.group(1)) if match else None, wkt, geographic, source)


def _wkt_name(wkt: str) -> str:
    """The CRS's name, else its projection method's."""
    match = re.match(r'\s*\w+\[\s*"([^"]*)"', wkt)
    if match and match.group(1).lower() not in ("", "unknown", "unnamed"):
        return match.group(1)
    method = re.search(r'(?:PROJECTION|METHOD)\[\s*"([^"]*)"', wkt)
    return method.group(1) if method else "a WKT CRS"


# -- CF grid mapping parameters as WKT 1 (CF appendix F; OGC 01-009 names) ---------------------
def _number(attrs: dict, name: str, default=None):
    value = attrs.get(name, default)
    if isinstance(value, list):
        value = value[0] if value else default
    return (
        float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default
    )


def _parallels(attrs: dict) -> list[float]:
    value = attrs.get("standard_parallel")
    values = value if isinstance(value, list) else [value]
    return [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _geogcs(attrs: dict) -> str:
    radius = _number(attrs, "earth_radius")
    a = _number(attrs, "semi_major_axis")
    invf = _number(attrs, "inverse_flattening")
    b = _number(attrs, "semi_minor_axis")
    if radius is not None:
        a, invf = radius, 0.0
    elif a is not None and invf is None:
        invf = a / (a - b) if b is not None and b != a else 0.0
    elif a is None:
        a, invf = _WGS84
    return (
        f'GEOGCS["unknown",DATUM["unknown",SPHEROID["unknown",{a!r},{invf!r}]],'
        f'PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433]]'
    )


def _projection(attrs: dict) -> tuple[str, list[tuple[str, float]]] | None:
    """(WKT 1 projection name, parameters) of a CF grid mapping, or None."""
    kind = attrs.get("grid_mapping_name")
    lon0 = _number(
        attrs,
        "longitude_of_central_meridian",
        _number(attrs, "longitude_of_projection_origin", 0.0),
    )
    lat0 = _number(attrs, "latitude_of_projection_origin", 0.0)
    parallels = _parallels(attrs)
    scale = _number(
        attrs,
        "scale_factor_at_central_meridian",
        _number(attrs, "scale_factor_at_projection_origin"),
    )
    if kind == "lambert_conformal_conic" and len(parallels) == 2:
        return "Lambert_Conformal_Conic_2SP", [
            ("standard_parallel_1", parallels[0]),
            ("standard_parallel_2", parallels[1]),
            ("latitude_of_origin", lat0),
            ("central_meridian", lon0),
        ]
    if kind == "lambert_conformal_conic" and len(parallels) == 1:
        return "Lambert_Conformal_Conic_1SP", [
            ("latitude_of_origin", parallels[0]),
            ("central_meridian", lon0),
            ("scale_factor", 1.0),
        ]
    if kind == "transverse_mercator":
        return "Transverse_Mercator", [
            ("latitude_of_origin", lat0),
            ("central_meridian", lon0),
            ("scale_factor", scale if scale is not None else 1.0),
        ]
    if kind == "polar_stereographic":
        lon = _number(attrs, "straight_vertical_longitude_from_pole", lon0)
        origin = parallels[0] if parallels else lat0
        return "Polar_Stereographic", [
            ("latitude_of_origin", origin),
            ("central_meridian", lon),
            ("scale_factor", scale if scale is not None else 1.0),
        ]
    if kind == "albers_conical_equal_area" and parallels:
        return "Albers_Conic_Equal_Area", [
            ("standard_parallel_1", parallels[0]),
            ("standard_parallel_2", parallels[-1]),
            ("latitude_of_center", lat0),
            ("longitude_of_center", lon0),
        ]
    if kind == "lambert_azimuthal_equal_area":
        return "Lambert_Azimuthal_Equal_Area", [
            ("latitude_of_center", lat0),
            ("longitude_of_center", lon0),
        ]
    if kind == "mercator" and parallels:
        return "Mercator_2SP", [("standard_parallel_1", parallels[0]), ("central_meridian", lon0)]
    if kind == "mercator":
        return "Mercator_1SP", [
            ("central_meridian", lon0),
            ("scale_factor", scale if scale is not None else 1.0),
        ]
    return None


def cf_wkt(attrs: dict) -> str | None:
    """WKT 1 of a CF grid mapping's parameters, or None for a mapping not rendered here
    (rotated poles, geostationary ...)."""
    if attrs.get("grid_mapping_name") == "latitude_longitude":
        return _geogcs(attrs)
    projection = _projection(attrs)
    if projection is None:
        return None
    name, parameters = projection
    parameters += [
        ("false_easting", _number(attrs, "false_easting", 0.0)),
        ("false_northing", _number(attrs, "false_northing", 0.0)),
    ]
    listed = ",".join(f'PARAMETER["{k}",{v!r}]' for k, v in parameters)
    return f'PROJCS["unknown",{_geogcs(attrs)},PROJECTION["{name}"],{listed},UNIT["metre",1]]'
