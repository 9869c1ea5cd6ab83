"""What a zarrfs ``.tif`` says beyond its pixels, as TIFF tags (``zarrfs.tiff.Tag``): the same
for the mount's files, ``zarrfs get -o x.tif`` and the viewer's export.

* **GeoTIFF** (OGC GeoTIFF 1.1) for a plane the engine can place on the Earth
  (``engine.cf.georeference``): ModelPixelScale and ModelTiepoint (pixel-is-area: the tie point
  is the outer corner of the first cell; ModelTransformation for a grid stored south up), and
  the GeoKey directory: an EPSG code (GeographicTypeGeoKey or ProjectedCSTypeGeoKey), else the WKT as GDAL reads it from a user
  defined model (``PCSCitationGeoKey = "ESRI PE String = <WKT>"``, at most 2400 bytes, in
  PROJ's shortest WKT that fits): GDAL 3 reads any CRS PROJ knows from it (rotated poles,
  geostationary views), where GeoTIFF's own keys have no code for them.
* **GDAL's metadata** (tag 42112, XML) of a CF variable: ``SCALE``/``OFFSET`` (raw values),
  ``UNITTYPE`` and ``DESCRIPTION`` per band, ``units``, ``long_name``, ``standard_name`` and the
  plane's position on the other axes (``time=2020-07-01``) for the dataset; **GDAL_NODATA**
  (tag 42113) from ``_FillValue``/``missing_value`` (``nan`` for decoded values).
* **Calibration** of a plane of an OME-Zarr level: the pixel size from its scale transform as
  XResolution/YResolution (pixels per unit, ResolutionUnit none) and ImageJ's description
  (``unit=micron``, ``spacing`` = the z step), so Fiji shows micrometres without Bio-Formats;
  its channel's name, colour (a LUT) and window in ImageJ's metadata. Files of several
  channels (the composite, ``get``'s stacks) carry OME-XML instead: ``zarrfs.tiff_ome``.

Everything comes from metadata and the coordinate variables, never from the pixels, so the
mount still knows a file's size before reading any data.
"""

from __future__ import annotations

import logging
import math
from fractions import Fraction
from typing import Literal
from xml.sax.saxutils import escape, quoteattr

import numpy as np

import zarrfs.engine as engine

from .tiff import ASCII, BYTE, DOUBLE, LONG, RATIONAL, SHORT, Tag

log = logging.getLogger(__name__)

#: GeoTIFF keys and codes (OGC 19-008r4, section 7)
_MODEL_TYPE, _RASTER_TYPE, _GEOGRAPHIC_TYPE, _PROJECTED_TYPE, _PCS_CITATION = (
    1024,
    1025,
    2048,
    3072,
    3073,
)
_PROJECTED, _GEOGRAPHIC, _USER_DEFINED, _PIXEL_IS_AREA = 1, 2, 32767, 1
_PIXEL_SCALE, _TIEPOINT, _TRANSFORMATION = 33550, 33922, 34264
_KEY_DIRECTORY, _ASCII_PARAMS = 34735, 34737
_GDAL_METADATA, _GDAL_NODATA = 42112, 42113
_DESCRIPTION, _X_RESOLUTION, _Y_RESOLUTION, _RESOLUTION_UNIT = 270, 282, 283, 296
#: the bands of a stack whose positions are read one by one, at most
MAX_BAND_POSITIONS = 4096
#: GDAL reads a PE string citation into a buffer of this size
_PE_LIMIT = 2400
#: OME-Zarr (UDUNITS-2) space units -> ImageJ's names ("micron" shows as µm)
_IMAGEJ_UNITS = {
    "angstrom": "A",
    "nanometer": "nm",
    "micrometer": "micron",
    "millimeter": "mm",
    "centimeter": "cm",
    "meter": "m",
    "kilometer": "km",
    "inch": "inch",
}


class Describer:
    """The tags of one array's ``.tif`` files; the georeference is read once, on first use.
    ``level``: the ``engine.Level`` the array is in an OME-Zarr image, else None."""

    def __init__(self, array, level=None):
        self.array = array
        self.level = level
        self._geo = None
        self._var = None
        self._plain = False  # known to have no CF tags: every plane's are the same (none)
        self.positions = engine.cf.PlanePositions(array)

    def shared_key(self, index: tuple[int, ...]):
        """A key the planes whose tags equal this plane's share, or None when they are its own
        (a CF plane's position): the mount lays out one header per key."""
        if self.level is not None:
            axis = self.level.image.channel_axis
            return ("channel", index[axis]) if axis is not None and axis < len(index) else ()
        return () if self._plain else None

    @property
    def georeference(self):
        if self._geo is None:
            try:
                self._geo = engine.cf.georeference(self.array)
            except engine.ZarrfsError as exc:  # a broken neighbour costs only the geotags
                self._geo = engine.cf.NoGeoreference(f"cannot be read: {exc.message}")
        return self._geo

    def plane_tags(self, index: tuple[int, ...], decoded: bool = False) -> tuple[Tag, ...]:
        """The tags of the plane at ``index`` (one per axis before the last two); ``decoded``:
        the file holds the CF-decoded values (``-o cf``)."""
        if self.level is not None:
            return calibration_tags(
                self.level, len(self.array.shape), channels=_channel(self.level, self.array, index)
            )
        try:
            if self._var is None:
                self._var = engine.cf.variable(self.array)
            position = _position(self.positions, index)
            tags = cf_tags(self.array, self.georeference, position, decoded, var=self._var)
            self._plain = not tags
            return tags
        except (engine.ZarrfsError, ValueError, TypeError) as exc:  # the pixels still serve
            log.warning("%s: TIFF tags left out: %s", self.array.path or "/", exc)
            return ()


def cf_tags(
    array, geo, position: tuple, decoded: bool, bands: tuple = ((),), var=None
) -> tuple[Tag, ...]:
    """GeoTIFF and GDAL tags of a plane of a CF variable (none for an array CF says nothing
    of): ``position``, the plane's place on the other axes as ``(dimension, text)`` pairs;
    ``bands``, per band of a stack, its place on the stacked axis."""
    var = var or engine.cf.variable(array)
    placed = isinstance(geo, engine.cf.Georeference)
    if not (placed or var.encoded or var.units or var.long_name or var.standard_name):
        return ()
    tags = list(geo_tags(geo)) if placed else []
    metadata = gdal_metadata(var, position, decoded, bands)
    if metadata:
        tags.append(Tag(_GDAL_METADATA, ASCII, metadata))
    nodata = nodata_text(var, decoded)
    if nodata is not None:
        tags.append(Tag(_GDAL_NODATA, ASCII, nodata))
    return tuple(tags)


def _position(positions, index: tuple[int, ...]) -> tuple:
    """``positions(index)`` (an ``engine.cf.PlanePositions``), else the indices."""
    try:
        return positions(index) if index else ()
    except engine.ZarrfsError:
        return tuple((f"dim_{k}", str(i)) for k, i in enumerate(index))


def geo_tags(geo) -> tuple[Tag, ...]:
    """ModelPixelScale, ModelTiepoint and the GeoKeys of an ``engine.cf.Georeference``; a
    grid whose rows run north (or columns west) gets ModelTransformation instead of the pixel
    scale, which readers take as positive (GDAL drops its sign)."""
    if geo.dx > 0 and geo.dy < 0:
        tags = [
            Tag(_PIXEL_SCALE, DOUBLE, (geo.dx, -geo.dy, 0.0)),
            Tag(_TIEPOINT, DOUBLE, (0.0, 0.0, 0.0, geo.x0, geo.y0, 0.0)),
        ]
    else:
        matrix = (geo.dx, 0.0, 0.0, geo.x0, 0.0, geo.dy, 0.0, geo.y0) + (0.0,) * 7 + (1.0,)
        tags = [Tag(_TRANSFORMATION, DOUBLE, matrix)]
    keys = [(_RASTER_TYPE, 0, 1, _PIXEL_IS_AREA)]
    ascii_params = ""
    crs = geo.crs
    if crs is not None and crs.epsg is not None:
        if crs.geographic:
            keys += [(_MODEL_TYPE, 0, 1, _GEOGRAPHIC), (_GEOGRAPHIC_TYPE, 0, 1, crs.epsg)]
        else:
            keys += [(_MODEL_TYPE, 0, 1, _PROJECTED), (_PROJECTED_TYPE, 0, 1, crs.epsg)]
    elif crs is not None and crs.wkt is not None:
        prefix = "ESRI PE String = "
        wkt = engine.cf.compact_wkt(crs.wkt, _PE_LIMIT - len(prefix))
        if wkt is not None:
            ascii_params = prefix + wkt + "|"
            keys += [
                (_MODEL_TYPE, 0, 1, _USER_DEFINED),
                (_PCS_CITATION, _ASCII_PARAMS, len(ascii_params), 0),
            ]
        else:
            log.info("CRS of %d characters left out of the GeoTIFF keys", len(crs.wkt))
    if len(keys) == 1:  # no CRS: no key directory, which GDAL would read as a local CS
        return tuple(tags)
    keys.sort()
    directory = (1, 1, 0, len(keys)) + tuple(v for key in keys for v in key)
    tags.append(Tag(_KEY_DIRECTORY, SHORT, directory))
    if ascii_params:
        tags.append(Tag(_ASCII_PARAMS, ASCII, ascii_params))
    return tuple(tags)


def gdal_metadata(var, position, decoded: bool, bands: tuple = ((),)) -> str | None:
    """GDAL's ``<GDALMetadata>`` XML of a CF variable and a plane's position (and per band of
    a stack, its own), or None."""
    items: list[tuple[str, int | None, str | None, object]] = [
        (name, None, None, value) for name, value in position
    ]
    for name in ("long_name", "standard_name", "units"):
        if getattr(var, name):
            items.append((name, None, None, getattr(var, name)))
    for band, band_position in enumerate(bands):
        items += [(name, band, None, value) for name, value in band_position]
        if var.packing is not None and not decoded:
            scale, offset = var.packing.scale_factor, var.packing.add_offset
            items.append(("SCALE", band, "scale", repr(1.0 if scale is None else scale)))
            items.append(("OFFSET", band, "offset", repr(0.0 if offset is None else offset)))
        if var.units:
            items.append(("UNITTYPE", band, "unittype", var.units))
        if var.long_name or position or band_position:
            text = var.long_name or var.name
            if band_position:
                text += " at " + ", ".join(f"{n}={v}" for n, v in band_position)
            items.append(("DESCRIPTION", band, "description", text))
    if not items:
        return None
    lines = ["<GDALMetadata>"]
    for name, sample, role, value in items:
        where = "" if sample is None else f' sample="{sample}"'
        where += f" role={quoteattr(role)}" if role else ""
        lines.append(f"  <Item name={quoteattr(name)}{where}>{escape(str(value))}</Item>")
    lines.append("</GDALMetadata>")
    return "\n".join(lines)


def nodata_text(var, decoded: bool) -> str | None:
    """GDAL_NODATA: the first missing value as stored, ``nan`` for decoded values."""
    masking = var.masking
    if masking is None or not masking.fill_values:
        return "nan" if decoded and masking is not None else None
    if decoded:
        return "nan"
    value = masking.fill_values[0]
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    return str(int(value))


# -- OME-Zarr calibration ------------------------------------------------------------------------
def calibration(level, ndim: int) -> tuple[float, float, str | None, float | None] | None:
    """(pixel height, pixel width, ImageJ unit, z spacing) of a level's planes, or None when
    its scale says nothing."""
    scale = level.dataset.scale
    axes = level.image.multiscale.axes
    if scale is None or len(scale) != ndim or len(axes) != ndim or ndim < 2:
        return None
    height, width = scale[-2], scale[-1]
    if not (height > 0 and width > 0 and math.isfinite(height) and math.isfinite(width)):
        return None
    unit = axes[-1].unit
    ij_unit = _IMAGEJ_UNITS.get(unit, unit) if unit else None
    spacing = None
    for k, axis in enumerate(axes[:-2]):
        if axis.name.lower() == "z" and (axis.type in (None, "space")) and scale[k] > 0:
            spacing = float(scale[k])
    return float(height), float(width), ij_unit, spacing


def calibration_tags(
    level, ndim: int, steps: tuple[int, int] = (1, 1), channels: tuple = ()
) -> tuple[Tag, ...]:
    """XResolution, YResolution, ResolutionUnit and ImageJ's description of a level's planes
    (taken every ``steps`` rows and columns); ``channels``: the ``engine.Channel`` a plane
    shows (its name, colour as a LUT and window as ImageJ's display range). The composite's
    tags: ``zarrfs.tiff_ome``."""
    found = calibration(level, ndim)
    tags = []
    if found is not None:
        height, width, unit, spacing = found
        height, width = height * abs(steps[0]), width * abs(steps[1])
        tags += [
            Tag(_X_RESOLUTION, RATIONAL, rational(1.0 / width)),
            Tag(_Y_RESOLUTION, RATIONAL, rational(1.0 / height)),
            Tag(_RESOLUTION_UNIT, SHORT, (1,)),  # none: the unit is ImageJ's
        ]
    if found is None and not channels:
        return ()
    unit, spacing = (found[2], found[3]) if found is not None else (None, None)
    tags.append(Tag(_DESCRIPTION, ASCII, imagej_description(unit, spacing)))
    tags += imagej_channels(channels)
    return tuple(sorted(tags, key=lambda t: t.code))


def _channel(level, array, index: tuple[int, ...]) -> tuple:
    """The channel the plane at ``index`` shows, as a 1-tuple, or ``()``."""
    axis = level.image.channel_axis
    if axis is None or axis >= len(index):
        return ()
    return (level.image.channels(array.shape[axis])[index[axis]],)


def imagej_channels(channels: tuple, label: str | None = None) -> list[Tag]:
    """ImageJ's metadata tags (IJMetadataByteCounts, IJMetadata; packed by tifffile): the
    plane's ``label``, else its one channel's label, LUT and display range."""
    import sys

    import tifffile

    if not channels and label is None:
        return []
    if label is None:
        channel = channels[0]
        ramp = np.arange(256, dtype=np.float64) / 255.0
        lut = np.rint(np.outer(channel.color, ramp)).astype(np.uint8)
        metadata: dict = {"Labels": [channel.label], "LUTs": [lut]}
        if channel.window is not None:
            metadata["Ranges"] = (float(channel.window.start), float(channel.window.end))
    else:
        metadata = {"Labels": [label]}
    order: Literal["<", ">"] = "<" if sys.byteorder == "little" else ">"
    counts, data = sorted(tifffile.imagej_metadata_tag(metadata, order), key=lambda t: t[0])
    return [Tag(counts[0], LONG, counts[3]), Tag(data[0], BYTE, data[3])]


def imagej_description(unit: str | None, spacing: float | None) -> str:
    """ImageJ's description of one image: its unit and z spacing (``ij.io.FileInfo``)."""
    lines = ["ImageJ=1.11a", "images=1"]
    if unit:
        lines.append(f"unit={unit}")
    if spacing is not None:
        lines.append(f"spacing={spacing!r}")
    return "\n".join(lines) + "\n"


def rational(value: float) -> tuple[int, int]:
    """A TIFF RATIONAL (two 32-bit unsigned integers) near ``value``."""
    fraction = Fraction(value).limit_denominator(1 << 20)
    numerator, denominator = fraction.numerator, fraction.denominator
    while numerator >= 1 << 32:
        numerator, denominator = numerator >> 1, max(1, denominator >> 1)
    return max(numerator, 1), denominator


# -- zarrfs get: a selection's TIFF ----------------------------------------------------------------
def selection_tags(array, items: list, level=None, decoded: bool = False) -> tuple[Tag, ...]:
    """The tags of the TIFF of ``array[items]`` (one int or slice per axis, as ``zarrfs get``
    expands a selection): those of the mount's plane file when the selection keeps the last two
    axes, shifted to its window (``()`` for any other selection); ``decoded``: the file holds
    CF-decoded values (``zarrfs get --decode``: no scale or offset, NaN as nodata)."""
    ndim = len(array.shape)
    if len(items) != ndim or ndim < 2 or not all(isinstance(i, (int, slice)) for i in items):
        return ()
    rows, cols = items[-2], items[-1]
    if not (isinstance(rows, slice) and isinstance(cols, slice)):
        return ()
    if level is not None:
        axis = level.image.channel_axis
        channel = items[axis] if axis is not None and axis < ndim - 2 else None
        shown = (
            (level.image.channels(array.shape[axis])[channel],) if isinstance(channel, int) else ()
        )
        steps = (rows.step or 1, cols.step or 1)
        return calibration_tags(level, ndim, steps=steps, channels=shown)
    try:
        geo = engine.cf.georeference(array, window=(rows, cols))
    except engine.ZarrfsError as exc:
        geo = engine.cf.NoGeoreference(str(exc))
    return _cf_selection_tags(array, geo, items[:-2], decoded)


def _cf_selection_tags(array, geo, leading: list, decoded: bool) -> tuple[Tag, ...]:
    """The CF tags of a selection whose leading ``items`` are ``leading``: a plane's position;
    for a 3-D stack, each band's place on its stacked axis."""
    positions = engine.cf.PlanePositions(array)
    stacked = [k for k, item in enumerate(leading) if isinstance(item, slice)]
    if not stacked:
        return cf_tags(array, geo, _position(positions, tuple(leading)), decoded=decoded)
    if len(stacked) > 1:  # 4-D and more: pages, without positions
        return cf_tags(array, geo, (), decoded=decoded)
    axis = stacked[0]
    indices = range(*leading[axis].indices(array.shape[axis]))
    if len(indices) > MAX_BAND_POSITIONS or not indices:
        return cf_tags(array, geo, (), decoded=decoded, bands=((),) * len(indices))
    places = [
        _position(positions, tuple(i if k == axis else item for k, item in enumerate(leading)))
        for i in indices
    ]
    plane = tuple(p for k, p in enumerate(places[0]) if k != axis)
    bands = tuple((p[axis],) for p in places)
    return cf_tags(array, geo, plane, decoded=decoded, bands=bands)


def decoded_dtype(array, dtype: np.dtype) -> np.dtype:
    """The type of a TIFF of ``array``'s CF-decoded values (``dtype`` as decoded): float32
    where it holds them (``engine.cf.compact_dtype``), as the mount's ``.cf.tif``."""
    try:
        compact = engine.cf.compact_dtype(engine.cf.variable(array))
    except engine.ZarrfsError:
        return dtype
    return compact if compact.kind == "f" and compact.itemsize < dtype.itemsize else dtype


#: how far above a level its image may be (ngff-zarr: ``image/scale0/image``, two)
_IMAGE_DEPTH = 3


def level_of(array):
    """The OME-Zarr pyramid level ``array`` is (an ``engine.Level``), or None: declared by its
    group, or by an ancestor a few groups up (ngff-zarr's ``scale0/image``), as the mount
    finds levels."""
    parent = getattr(array, "parent", None)
    for _ in range(_IMAGE_DEPTH):
        if parent is None:
            return None
        below = array.path[len(parent.path) :].strip("/")
        level = engine.image_levels(parent).get(below)
        if level is not None:
            return level
        parent = getattr(parent, "parent", None)
    return None


def write_plane(path, array, index: tuple[int, ...]) -> None:
    """The plane of ``array`` at ``index`` (one per axis before the last two) as the mount's
    ``.tif`` of it, byte for byte (the viewer's TIFF export)."""
    values = np.asarray(array.read(tuple(index) + (slice(None), slice(None))))
    if values.dtype.kind == "b":
        values = values.astype(np.uint8)
    values = values.astype(values.dtype.newbyteorder("="), copy=False)
    write(path, values, Describer(array, level_of(array)).plane_tags(tuple(index)))


def write(path, data: np.ndarray, tags: tuple[Tag, ...] = (), ome: dict | None = None) -> None:
    """Write ``data`` (native byte order, numeric) as TIFF: a plane laid out as the mount lays
    out its plane files (``tiff.tiff_layout``, the same bytes); a stack through tifffile: as an
    OME-TIFF when ``ome`` (``tiff_ome.ome_options``: tifffile's options) is given, a 3-D stack
    with geo or GDAL tags as one image of bands (GDAL's reading of a TIFF: one band per plane),
    deeper ones as pages."""
    from .tiff import supports_tiff, tiff_layout

    if data.ndim == 2 and supports_tiff(data.dtype, data.shape):
        layout = tiff_layout(data.dtype, data.shape, tags=tags)
        with open(path, "wb") as f:
            f.write(layout.prefix)
            f.write(np.ascontiguousarray(data).data)
        return
    import tifffile

    extratags = [(t.code, t.type, t.count, t.values, True) for t in tags if t.code >= _PIXEL_SCALE]
    options: dict = {"photometric": "minisblack", "bigtiff": data.nbytes > 2**32 - 2**25}
    if extratags and ome is None and data.ndim == 3:  # one image of bands, as GDAL reads it
        options["planarconfig"] = "separate"
    tifffile.imwrite(path, data, extratags=extratags, **options, **(ome or {}))
