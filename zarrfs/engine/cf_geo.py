"""Where a plane of a CF variable lies on the Earth: its geotransform and coordinate reference
system, or the reason it has none.

The geotransform comes from the 1-D coordinate variables of the plane's two axes (CF 5), which
hold the *centres* of the cells: a regular axis (every value within a relative tolerance of a
straight line) gives the outer edge of its first cell and the spacing; an irregular one (a
Gaussian grid, a stretched vertical) gives none, rather than a wrong one.

The CRS, first found wins:

1. the variable's ``grid_mapping`` (CF 5.6): its ``crs_wkt`` (CF 1.7), its ``spatial_ref`` (GDAL
   and rioxarray), else its parameters (``grid_mapping_name`` and the rest, CF appendix F),
   rendered as WKT 2 by PROJ (pyproj): every mapping a CRS can express, rotated poles and
   geostationary views included; one PROJ cannot express gives no CRS, and the reason;
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
_EPSG_TAIL = re.compile(r'(?:ID|AUTHORITY)\[\s*"EPSG"\s*,\s*"?(\d+)"?\s*\]\s*\]\s*$', re.I)
_EPSG_URL = re.compile(r"EPSG/\d+/(\d+)\s*$|EPSG:+(\d+)\s*$", re.I)
_METRES = {"m": 1.0, "metre": 1.0, "meter": 1.0, "metres": 1.0, "meters": 1.0, "km": 1000.0}
_RADIANS = ("rad", "radian", "radians")


@dataclass(frozen=True)
class CRS:
    """A coordinate reference system: an EPSG code, its WKT, or both."""

    epsg: int | None
    wkt: str | None
    geographic: bool
    source: str  # where it was found, for ``info.txt``
    #: metres per radian of x/y given as scanning angles (CF 1.11 F.6: a geostationary view's
    #: coordinates in radians, times the satellite's height); None: not such a projection
    radian_metres: float | None = None

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
    crs, refused, note = _find_crs(array, kinds, group)
    if refused is not None:
        return NoGeoreference(refused)
    edges = []
    for k, dim in enumerate(dims):
        try:
            values = _values(coordinates[dim][1], None if window is None else window[k])
        except (ZarrfsError, TypeError, ValueError) as exc:
            return NoGeoreference(f"coordinate {dim} cannot be read: {exc}")
        spacing = _spacing(dim, values)
        if isinstance(spacing, str):
            return NoGeoreference(spacing)
        factor = _metres(variables[k].units, crs)
        edges.append((float(values[0] - spacing / 2) * factor, spacing * factor))
    (y0, dy), (x0, dx) = edges
    return Georeference(x0, dx, y0, dy, crs, note)


def _metres(units: str | None, crs: CRS | None) -> float:
    """The factor from a projected coordinate's ``units`` to the CRS's metres (1: as stored)."""
    if crs is None or crs.geographic:
        return 1.0
    units = (units or "").strip().lower()
    if units in _RADIANS and crs.radian_metres is not None:
        return crs.radian_metres
    return _METRES.get(units, 1.0)


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
def _find_crs(array, kinds, group) -> tuple[CRS | None, str | None, str | None]:
    """(the CRS, None, None); or (None, why there is no georeference, None); or (None, None,
    why the CRS is missing): a projected grid gets its geotransform alone."""
    crs, why = _grid_mapping_crs(array, group)
    crs = crs or _gdal_crs(array.attrs.get("_CRS"))
    if crs is not None:
        return crs, None, None
    why = why or "no grid_mapping or _CRS names a CRS"
    if kinds == [cf_axes.LATITUDE, cf_axes.LONGITUDE]:
        return CRS(4326, None, True, "latitude/longitude coordinates"), None, None
    if kinds == [cf_axes.GRID_Y, cf_axes.GRID_X]:
        return None, None, why
    return None, f"the axes are not latitude/longitude and {why}", None


def _grid_mapping_crs(array, parent) -> tuple[CRS | None, str | None]:
    """The CRS of the variable's ``grid_mapping``, or None and why not (None: it names none)."""
    name = array.attrs.get("grid_mapping")
    if not isinstance(name, str) or not name.strip() or parent is None:
        return None, None
    name = name.split(":")[0].split()[0]  # CF 1.7's "crs: x y" form names one mapping first
    where = f"grid_mapping {name}"
    try:
        node = parent[name]
    except (ZarrfsError, KeyError):
        return None, f"{where} is not a variable beside it"
    attrs = getattr(node, "attrs", None) or {}
    for key in ("crs_wkt", "spatial_ref"):
        if isinstance(attrs.get(key), str) and attrs[key].strip():
            return _from_wkt(attrs[key].strip(), f"{where} {key}", attrs), None
    wkt, why = cf_wkt(attrs)
    if wkt is None:
        return None, f"{where}: {why}"
    return _from_wkt(wkt, f"{where} parameters", attrs), None


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


def _from_wkt(wkt: str, source: str, attrs: dict | None = None) -> CRS:
    match = _EPSG_TAIL.search(wkt[-200:])  # the outermost ID closes the text
    head = wkt.lstrip().split("[", 1)[0].strip().upper()
    geographic = head in ("GEOGCS", "GEOGCRS", "GEODCRS", "GEOGRAPHICCRS")
    radian = None
    if attrs and attrs.get("grid_mapping_name") == "geostationary":
        height = attrs.get("perspective_point_height")
        if isinstance(height, (int, float)) and not isinstance(height, bool) and height > 0:
            radian = float(height)
    return CRS(int(match.group(1)) if match else None, wkt, geographic, source, radian)


def _wkt_name(wkt: str) -> str:
    """The CRS's name, else its projection method's."""
    match = re.match(r'\s*\w+\[\s*"([^"]*)"', wkt)
    if match and match.group(1).lower() not in ("", "unknown", "unnamed", "undefined"):
        return match.group(1)
    method = re.search(r'(?:PROJECTION|METHOD)\[\s*"([^"]*)"', wkt)
    return method.group(1) if method else "a WKT CRS"


# -- CF grid mapping parameters (CF appendix F), rendered by PROJ --------------------------
def cf_wkt(attrs: dict) -> tuple[str | None, str | None]:
    """(WKT 2, None) of a CF grid mapping's parameters, or (None, why not): PROJ (through
    pyproj, ``CRS.from_cf``) knows every ``grid_mapping_name`` of CF 1.11 appendix F that a
    CRS can express (rotated poles and geostationary views included), with each one's
    ellipsoid parameters; hand-written WKT would cover a few and drift from the spec."""
    import pyproj  # imported on first use: only grid mappings without a WKT need it
    from pyproj.exceptions import CRSError

    kind = attrs.get("grid_mapping_name")
    if not isinstance(kind, str) or not kind.strip():
        return None, "it has no grid_mapping_name"
    try:
        crs = pyproj.CRS.from_cf({k: v for k, v in attrs.items() if k not in _NOT_PARAMETERS})
        return crs.to_wkt(), None
    except (CRSError, ValueError, TypeError, KeyError) as exc:
        return None, f"PROJ cannot express grid_mapping_name {kind!r}: {exc}"


#: attributes of a grid mapping variable that are not its parameters (written beside them by
#: xarray and netCDF writers)
_NOT_PARAMETERS = ("_FillValue", "missing_value", "_ARRAY_DIMENSIONS", "coordinates")


def compact_wkt(wkt: str, limit: int) -> str | None:
    """``wkt`` on one line, or the same CRS in PROJ's shorter WKT forms (GDAL's WKT 1 with its
    PROJ extension, WKT 2 of 2015), whichever first has fewer than ``limit`` characters; None
    when none does (a GeoTIFF citation has room for so many)."""
    line = " ".join(wkt.split())
    if len(line) < limit:
        return line
    import pyproj
    from pyproj.exceptions import CRSError

    try:
        crs = pyproj.CRS.from_wkt(wkt)
    except CRSError:
        return None
    for version in ("WKT1_GDAL", "WKT2_2015"):
        try:
            text = crs.to_wkt(version)
        except CRSError:
            continue
        if text and len(text) < limit:
            return text
    return None
