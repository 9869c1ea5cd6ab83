"""What the CF conventions and xarray say about an array, parsed once from its attributes.

CF conventions 1.11: section 1.3 / 8.1 "Packed Data" (``scale_factor``, ``add_offset``), 2.5.1
"Missing data, valid and actual range of data" (``_FillValue``, ``missing_value``,
``valid_range``/``valid_min``/``valid_max``, compared with the *packed* values), 3.1-3.3
(``units``, ``long_name``, ``standard_name``), 4.4 (time, in ``cf_time``), 5 "Coordinate Systems"
(a coordinate variable is a 1-D variable named like its dimension; ``coordinates`` names
auxiliary ones). xarray's Zarr conventions: v2 arrays name their dimensions in
``_ARRAY_DIMENSIONS``; in v2 the array's ``fill_value`` is its ``_FillValue``, in v3 the
``_FillValue`` attribute is (floats base64-encoded as xarray writes them).

Decoding happens on request: ``array[...]`` stays the stored values, :func:`decode` gives the
CF view. Attributes that do not parse (a string ``scale_factor``, units that do not read as a
date) never stop a node from opening: the part is left out and named in ``Variable.problems``.
"""

from __future__ import annotations

import base64
import math
import struct
from dataclasses import dataclass

import numpy as np

from . import cf_axes as axes
from . import cf_decode, cf_geo
from .cf_axes import axis_kind
from .cf_geo import CRS, Georeference, NoGeoreference, compact_wkt
from .cf_time import TimeUnits, TimeUnitsError, format_date, parse_time_units
from .errors import ZarrfsError


def dimension_names_from_attrs(attrs: dict | None, ndim: int) -> tuple[str, ...] | None:
    """xarray's ``_ARRAY_DIMENSIONS``, when it is a list of ``ndim`` strings (else None)."""
    names = (attrs or {}).get("_ARRAY_DIMENSIONS")
    if isinstance(names, list) and len(names) == ndim and all(isinstance(n, str) for n in names):
        return tuple(names)
    return None


@dataclass(frozen=True)
class Packing:
    """``decoded = stored * scale_factor + add_offset`` (CF 8.1)."""

    scale_factor: float | None
    add_offset: float | None


@dataclass(frozen=True)
class Masking:
    """Stored values that mean "no data": ``_FillValue``/``missing_value``, and values outside
    ``valid_min``..``valid_max`` (CF 2.5.1)."""

    fill_values: tuple = ()
    valid_min: float | None = None
    valid_max: float | None = None


@dataclass(frozen=True)
class Variable:
    """The CF view of one array."""

    name: str
    dimensions: tuple[str, ...]
    stored_dtype: np.dtype
    units: str | None = None
    long_name: str | None = None
    standard_name: str | None = None
    coordinates: tuple[str, ...] = ()  # the ``coordinates`` attribute (auxiliary coordinates)
    packing: Packing | None = None
    masking: Masking | None = None
    time: TimeUnits | None = None
    problems: tuple[str, ...] = ()  # what was left out because it does not parse, and why
    ignored: tuple[str, ...] = ()  # the names of the attributes left out

    @property
    def encoded(self) -> bool:
        """Decoding changes the values (packed, masked or times)."""
        return bool(self.packing or self.masking or self.time)

    @property
    def decoded_dtype(self) -> np.dtype:
        """``datetime64[ns]``/object for times, else the float type xarray picks
        (``xarray.coding.variables._choose_float_dtype``), else the stored type."""
        if self.time is not None:
            return np.dtype("datetime64[ns]" if self.time.in_numpy else object)
        if not (self.packing or self.masking):
            return self.stored_dtype
        return _float_dtype(self.stored_dtype, self.packing)


def compact_dtype(var: Variable) -> np.dtype:
    """The decoded values' type in a file made to be read by other programs (a ``.cf.tif``):
    float32 for 8- and 16-bit integers whose packing keeps every decoded value apart in
    float32 (as the netCDF tools unpack them: 24 bits of float32 hold 16 bits of counts),
    else ``var.decoded_dtype`` (a float64 variable stays float64; 32-bit counts need it)."""
    dtype = var.decoded_dtype
    stored = var.stored_dtype
    if dtype != np.float64 or stored.kind not in "iu" or stored.itemsize > 2:
        return dtype
    scale, offset = 1.0, 0.0
    if var.packing is not None:
        scale = 1.0 if var.packing.scale_factor is None else abs(var.packing.scale_factor)
        offset = 0.0 if var.packing.add_offset is None else abs(var.packing.add_offset)
    info = np.iinfo(stored)
    largest = offset + scale * max(abs(info.min), info.max)
    finite = math.isfinite(largest) and 0 < scale and largest < float(np.finfo(np.float32).max)
    # apart: float32's spacing at the largest value is under half a packing step
    if finite and float(np.spacing(np.float32(largest))) <= scale / 2:
        return np.dtype(np.float32)
    return dtype


def _float_dtype(stored: np.dtype, packing: Packing | None) -> np.dtype:
    if packing is not None:  # JSON numbers are doubles, so xarray unpacks to float64
        return np.dtype(np.float64)
    if stored.kind == "f" and stored.itemsize <= 4:
        return np.dtype(np.float32)
    if stored.kind in "iub" and stored.itemsize <= 2:
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def variable(array) -> Variable:
    """The CF view of an engine ``Array``, from its metadata alone."""
    attrs = array.attrs
    dtype = np.dtype(array.dtype)
    problems = _Problems()
    names = array.dimension_names or ()
    dims = tuple(n if n else f"dim_{k}" for k, n in enumerate(names)) or tuple(
        f"dim_{k}" for k in range(array.ndim)
    )
    packing = _packing(attrs, dtype, problems)
    masking = _masking(array, attrs, dtype, problems)
    try:
        time = parse_time_units(attrs.get("units"), attrs.get("calendar"))
    except TimeUnitsError as exc:
        time, _ = None, problems.add(str(exc), "units", "calendar")
    if time is not None and dtype.kind not in "iuf":
        time, _ = None, problems.add(f"time units on a {dtype} array", "units", "calendar")
    coordinates = attrs.get("coordinates")
    return Variable(
        name=array.name,
        dimensions=dims,
        stored_dtype=dtype,
        units=_text(attrs, "units", problems),
        long_name=_text(attrs, "long_name", problems),
        standard_name=_text(attrs, "standard_name", problems),
        coordinates=tuple(coordinates.split()) if isinstance(coordinates, str) else (),
        packing=packing,
        masking=masking,
        time=time,
        problems=tuple(problems.messages),
        ignored=tuple(dict.fromkeys(problems.names)),
    )


class _Problems:
    """Attributes left out, by name, and why."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.names: list[str] = []

    def add(self, message: str, *names: str) -> None:
        self.messages.append(message)
        self.names.extend(names)


def _text(attrs: dict, name: str, problems: _Problems) -> str | None:
    value = attrs.get(name)
    if value is None or isinstance(value, str):
        return value
    problems.add(f"{name} {value!r} is not text", name)
    return None


def _number(attrs: dict, name: str, problems: _Problems) -> float | None:
    value = attrs.get(name)
    if isinstance(value, list) and len(value) == 1:  # netCDF-C writes attributes as lists
        value = value[0]
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return value
    problems.add(f"{name} {value!r} is not a number; left out", name)
    return None


def _packing(attrs: dict, dtype: np.dtype, problems: _Problems) -> Packing | None:
    scale = _number(attrs, "scale_factor", problems)
    offset = _number(attrs, "add_offset", problems)
    if scale is None and offset is None:
        return None
    if dtype.kind not in "iuf":
        message = f"scale_factor/add_offset on a {dtype} array; left out"
        problems.add(message, "scale_factor", "add_offset")
        return None
    return Packing(
        float(scale) if scale is not None else None, float(offset) if offset is not None else None
    )


def _masking(array, attrs: dict, dtype: np.dtype, problems: _Problems) -> Masking | None:
    if dtype.kind not in "iuf":
        return None
    values = []
    for name in ("_FillValue", "missing_value"):
        parsed = _fill_attr(attrs.get(name), dtype)
        if attrs.get(name) is not None and not parsed:
            problems.add(f"{name} {attrs[name]!r} is not a {dtype} value; left out", name)
        values += parsed
    if "_FillValue" not in attrs and array.zarr_format == 2 and array.dimension_names:
        stored = array.stored_metadata.get(".zarray", {}).get("fill_value")
        if stored is not None:  # xarray: a v2 array's fill_value is its _FillValue
            values.append(array.fill_value.item())
    low, high = _valid_range(attrs, problems)
    if not values and low is None and high is None:
        return None
    unique = tuple(dict.fromkeys(v for v in values if not (isinstance(v, float) and v != v)))
    nan = any(isinstance(v, float) and v != v for v in values)
    return Masking(unique + ((math.nan,) if nan else ()), low, high)


def _fill_attr(value, dtype: np.dtype) -> list:
    """A ``_FillValue``/``missing_value`` attribute as numbers (xarray's v3 base64 for floats)."""
    if isinstance(value, str) and dtype.kind == "f":
        try:
            return [struct.unpack("<d", base64.standard_b64decode(value))[0]]
        except (ValueError, struct.error):
            return [float(value)] if value in ("NaN", "Infinity", "-Infinity") else []
    items = value if isinstance(value, list) else [value]
    return [float(v) if dtype.kind == "f" else v for v in items if _is_number(v)]


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _valid_range(attrs: dict, problems: _Problems) -> tuple[float | None, float | None]:
    pair = attrs.get("valid_range")
    if pair is not None:
        if isinstance(pair, list) and len(pair) == 2 and all(_is_number(v) for v in pair):
            return pair[0], pair[1]
        problems.add(f"valid_range {pair!r} is not two numbers; left out", "valid_range")
    return _number(attrs, "valid_min", problems), _number(attrs, "valid_max", problems)


def decode(var: Variable, stored: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Stored values to the CF view: masked values NaN (NaT/None for times), unpacked, and
    times as dates. Bit for bit what xarray's decoding gives (except ``valid_range``, which
    xarray does not apply). ``out``: a ``var.decoded_dtype`` array of the stored shape to
    decode into (a strided view is fine: a tile of a plane, from an ``on_chunk`` callback);
    thread-safe. A large array is decoded on the engine's decode workers and the calling
    thread together (see :mod:`cf_decode`)."""
    return cf_decode.decode(var, stored, out)


def read_decoded(
    array, selection=..., var: Variable | None = None, out: np.ndarray | None = None
) -> np.ndarray:
    """``array.read(selection)``, decoded (into ``out`` when given: a viewer that reuses its
    buffer saves the page faults of a new one). A large one is decoded by the decode workers
    and the calling thread together."""
    return cf_decode.read(array, selection, var or variable(array), out)


@dataclass(frozen=True)
class Coordinate:
    """A coordinate variable (CF 5): a 1-D array named like its dimension."""

    name: str
    size: int
    variable: Variable
    first: object  # decoded value (a date for times)
    last: object


def format_value(value) -> str:
    """A decoded coordinate value as short text: dates ISO ("2000-01-05"), numbers ``%g``-like
    ("850", "-89.5")."""
    if value is None or isinstance(value, np.datetime64) or hasattr(value, "calendar"):
        return format_date(value)
    if isinstance(value, (float, np.floating)):
        return "NaN" if value != value else repr(float(value)).removesuffix(".0")
    return str(value.item() if isinstance(value, np.generic) else value)


def coordinate_arrays(group, dimensions) -> dict[str, object]:
    """``{dimension: array}`` for each dimension that has a coordinate variable in ``group``."""
    found: dict[str, object] = {}
    if group is None:
        return found
    try:  # one listing (a round trip on a remote store), not one per dimension
        children = set(group.keys())
    except ZarrfsError:  # an unlistable group only loses its coordinates
        return found
    for dim in dict.fromkeys(dimensions):
        try:
            node = group[dim] if dim in children else None
        except ZarrfsError:  # a broken sibling only loses its coordinates
            continue
        if node is not None and node.kind == "array" and node.ndim == 1:
            if (node.dimension_names or (dim,))[0] == dim:
                found[dim] = node
    return found


def auxiliary_arrays(group, array) -> dict[str, object]:
    """``{name: array}`` of the auxiliary coordinates ``array``'s ``coordinates`` attribute
    names (CF 5: a 2-D latitude and longitude of a curvilinear grid, say) that are arrays in
    ``group`` over some of ``array``'s dimensions, each as long as the array along them."""
    found: dict[str, object] = {}
    listed = array.attrs.get("coordinates") if group is not None else None
    dims = tuple(array.dimension_names or ())
    if not isinstance(listed, str) or not dims:
        return found
    for name in dict.fromkeys(listed.split()):
        try:
            node = group[name]
        except (ZarrfsError, KeyError):  # named but absent, or broken: only loses its labels
            continue
        own = tuple(getattr(node, "dimension_names", None) or ())
        if node.kind != "array" or not own or not set(own) <= set(dims) or node.path == array.path:
            continue
        if all(node.shape[k] == array.shape[dims.index(d)] for k, d in enumerate(own)):
            found[name] = node
    return found


def coordinate_names(members) -> dict[str, str]:
    """Which of a group's children are coordinates (CF 5), from their metadata alone (no read):
    ``{name: "dimension"}`` for a 1-D array named like its dimension, ``{name: "auxiliary"}``
    for one another array names in its ``coordinates`` attribute. ``members``: ``(name, node)``
    pairs as ``Group.members()`` gives them; broken nodes and nodes that are not arrays count
    for nothing."""
    found: dict[str, str] = {}
    arrays = [(n, node) for n, node in members if getattr(node, "kind", None) == "array"]
    for name, node in arrays:
        if node.ndim == 1 and tuple(node.dimension_names or ())[:1] == (name,):
            found[name] = "dimension"
    names = {name for name, _ in arrays}
    for _, node in arrays:
        listed = node.attrs.get("coordinates")
        for other in listed.split() if isinstance(listed, str) else ():
            if other in names:
                found.setdefault(other, "auxiliary")
    return found


def coordinate(array) -> Coordinate:
    """A coordinate variable with its first and last decoded values (two elements read)."""
    var = variable(array)
    n = array.shape[0]
    ends = decode(var, array.read(slice(0, n, max(n - 1, 1)))) if n else np.empty(0)
    return Coordinate(array.name, n, var, ends[0] if n else None, ends[-1] if n else None)


def north_up(array, group=None) -> bool:
    """Whether ``array``'s rows (its second-to-last axis) run south to north: a latitude (or
    projected y) coordinate increasing with the row, so that a map drawn north up flips them.
    ``group``: where its coordinates are (default: its parent). Reads two values."""
    from .cf_axes import GRID_Y, LATITUDE, axis_kind

    if array.ndim < 2:
        return False
    name = variable(array).dimensions[-2]
    found = coordinate_arrays(group if group is not None else array.parent, [name]).get(name)
    if found is None or axis_kind(name, variable(found)) not in (LATITUDE, GRID_Y):
        return False
    try:
        ends = coordinate(found)
        return ends.size > 1 and bool(ends.last > ends.first)
    except (ZarrfsError, TypeError):  # unreadable or not numbers: drawn as stored
        return False


def coordinate_labels(array) -> tuple[str, ...] | None:
    """Every decoded value of a 1-D coordinate as text (reads it whole), or None when two
    share a text: the texts name folders."""
    values = read_decoded(array)
    labels = tuple(format_value(v) for v in values)
    return labels if len(set(labels)) == len(labels) else None


def georeference(array, axes: tuple[int, int] = (-2, -1), window=None, group=None):
    """Where the planes of ``array`` over ``axes`` (rows, columns) lie on the Earth: a
    :class:`Georeference` (GDAL's geotransform and a :class:`CRS`), or a
    :class:`NoGeoreference` saying why not (``cf_geo``). ``window``: the two slices of those
    axes a selection keeps (``zarrfs get``), else the whole plane; ``group``: where its
    coordinates and grid mapping live, when not its parent (an array opened by its own URL).
    Reads the two 1-D coordinates whole."""
    ndim = len(array.shape)
    names = array.dimension_names
    rows, cols = (a % ndim for a in axes) if ndim >= 2 else (0, 0)
    if ndim < 2 or not names or not names[rows] or not names[cols]:
        return NoGeoreference("the plane's axes have no dimension names")
    dims = (names[rows], names[cols])
    group = group if group is not None else getattr(array, "parent", None)
    found = coordinate_arrays(group, dims)
    coordinates = {}
    for dim, coord in found.items():
        size = array.shape[rows if dim == dims[0] else cols]
        if coord.shape[0] != size:
            return NoGeoreference(f"{dim} has {coord.shape[0]} values for {size} pixels")
        if coord.shape[0] > cf_geo.MAX_COORDINATE:  # read whole to check it: not past this
            return NoGeoreference(f"{dim} has {coord.shape[0]} values, too many to check")
        var = variable(coord)
        coordinates[dim] = (var, lambda coord=coord, var=var: read_decoded(coord, ..., var))
    return cf_geo.georeference(array, dims, coordinates, window, group)


def plane_position(array, index: tuple[int, ...]) -> tuple[tuple[str, str], ...]:
    """Where the plane at ``index`` (one index per axis before its two) lies on those axes:
    ``(dimension, text)``, the text its coordinate's decoded value (``("time", "2020-07-01")``),
    else the index. A coordinate that cannot be read gives the index."""
    return PlanePositions(array)(index)


class PlanePositions:
    """:func:`plane_position` for many planes of one array: the coordinates are found once,
    and one of at most :data:`WHOLE_COORDINATE` values is read whole on first use (a longer
    one, one value per plane)."""

    WHOLE_COORDINATE = 1 << 20

    def __init__(self, array):
        self.array = array
        names = array.dimension_names or ()
        ndim = len(array.shape)
        self.dims = [names[k] if k < len(names) and names[k] else f"dim_{k}" for k in range(ndim)]
        self._found = None
        self._values: dict[str, object] = {}

    def _coordinate(self, k: int):
        if self._found is None:
            parent = getattr(self.array, "parent", None)
            leading = self.dims[: len(self.array.shape) - 2]
            self._found = coordinate_arrays(parent, leading) if self.array.dimension_names else {}
        coord = self._found.get(self.dims[k])
        return coord if coord is not None and coord.shape[0] == self.array.shape[k] else None

    def _text(self, k: int, i: int) -> str:
        coord = self._coordinate(k)
        if coord is None:
            return str(i)
        try:
            if coord.shape[0] > self.WHOLE_COORDINATE:
                return format_value(read_decoded(coord, slice(i, i + 1))[0])
            values = self._values.get(coord.name)
            if values is None:
                values = self._values[coord.name] = read_decoded(coord)
            return format_value(values[i])
        except ZarrfsError:
            return str(i)

    def __call__(self, index: tuple[int, ...]) -> tuple[tuple[str, str], ...]:
        return tuple((self.dims[k], self._text(k, i)) for k, i in enumerate(index))


__all__ = [
    "CRS",
    "Coordinate",
    "Georeference",
    "NoGeoreference",
    "PlanePositions",
    "axes",
    "axis_kind",
    "Masking",
    "Packing",
    "TimeUnits",
    "Variable",
    "compact_dtype",
    "compact_wkt",
    "coordinate",
    "coordinate_arrays",
    "coordinate_labels",
    "coordinate_names",
    "decode",
    "dimension_names_from_attrs",
    "format_value",
    "georeference",
    "plane_position",
    "north_up",
    "read_decoded",
    "variable",
]
