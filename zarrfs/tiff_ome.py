"""OME-XML (the OME 2016-06 schema) for the TIFFs of an OME-Zarr level that hold more than one
channel: the mount's RGB composite (``-o composite``; the viewer's TIFF export of a composite)
and ``zarrfs get`` of several channels, z or t. tifffile builds the XML (``tifffile.OmeXml``,
which ``tifffile.imwrite(ome=True)`` uses too): axes, physical sizes and units, channel names
and colours.

An RGB composite is one OME ``Channel`` of three samples, with room for one name: the channels
it blends (names, colours, windows) are listed in a ``MapAnnotation`` of the image.

Fiji without Bio-Formats does not read OME-XML, so both files also state the pixel size as TIFF
resolution in pixels per centimetre: ImageJ shows a centimetre pixel size of at most 10 µm in
µm (``ij.io.FileOpener.setCalibration``, ``Prefs.convertToMicrons``, on by default).
"""

from __future__ import annotations

import math
import uuid

import numpy as np

from .tiff import ASCII, RATIONAL, SHORT, Tag
from .tiff_meta import imagej_channels, rational

#: OME-Zarr's space units (NGFF 0.4 "axes") -> (the OME-XML unit symbol, centimetres)
_LENGTHS = {
    "yoctometer": ("ym", 1e-22),
    "zeptometer": ("zm", 1e-19),
    "attometer": ("am", 1e-16),
    "femtometer": ("fm", 1e-13),
    "picometer": ("pm", 1e-10),
    "angstrom": ("Å", 1e-8),
    "nanometer": ("nm", 1e-7),
    "micrometer": ("µm", 1e-4),
    "millimeter": ("mm", 0.1),
    "centimeter": ("cm", 1.0),
    "decimeter": ("dm", 10.0),
    "meter": ("m", 100.0),
    "hectometer": ("hm", 1e4),
    "kilometer": ("km", 1e5),
    "megameter": ("Mm", 1e8),
    "gigameter": ("Gm", 1e11),
    "terameter": ("Tm", 1e14),
    "petameter": ("Pm", 1e17),
    "exameter": ("Em", 1e20),
    "zettameter": ("Zm", 1e23),
    "yottameter": ("Ym", 1e26),
    "inch": ("in", 2.54),
    "foot": ("ft", 30.48),
    "yard": ("yd", 91.44),
    "mile": ("mi", 160934.4),
    "parsec": ("pc", 3.0856775814913673e18),
}
_SYMBOLS = {symbol: cm for symbol, cm in _LENGTHS.values()}
_DESCRIPTION, _X_RESOLUTION, _Y_RESOLUTION, _RESOLUTION_UNIT = 270, 282, 283, 296
_NONE, _CENTIMETER = 1, 3
#: the name space of the composites' OME UUIDs: a file's bytes depend on its metadata alone
_UUIDS = uuid.UUID("7d1c6a52-0f0e-4b8e-9a51-2f6f0c3c7a30")


def ome_metadata(level, items: list, shape: tuple) -> dict | None:
    """tifffile's OME-XML metadata (axes, physical sizes, channel names and colours) of the
    stack ``array[items]`` of an OME-Zarr level, or None where OME-XML has no place for its
    axes (other than T, C, Z, Y, X, or not ending in Y, X)."""
    axes = level.image.multiscale.axes
    if len(items) != len(axes) or not all(isinstance(i, (int, slice)) for i in items):
        return None
    kept = [k for k, item in enumerate(items) if isinstance(item, slice)]
    letters = "".join(axes[k].name.upper()[:1] for k in kept)
    if len(kept) < 3 or not letters.endswith("YX") or len(set(letters)) != len(letters):
        return None
    if set(letters) - set("TCZYX"):
        return None
    out: dict = {"axes": letters}
    steps = {k: items[k].step or 1 for k in kept}
    for letter, k in zip(letters, kept, strict=True):
        if letter in "XYZ":
            out.update(_physical_size(level, k, letter, steps[k]))
    channel_axis = level.image.channel_axis
    if channel_axis in kept:
        chosen = range(*items[channel_axis].indices(shape[channel_axis]))
        channels = level.image.channels(max(chosen, default=-1) + 1)
        out["Channel"] = {
            "Name": [channels[c].label for c in chosen],
            "Color": [_ome_color(channels[c].color) for c in chosen],
        }
    return out


def _physical_size(level, k: int, letter: str, step: int = 1) -> dict:
    """``PhysicalSize<letter>`` (and its unit) of axis ``k``, taken every ``step``, or {}."""
    scale = level.dataset.scale
    axes = level.image.multiscale.axes
    if scale is None or len(scale) != len(axes) or not (scale[k] > 0 and math.isfinite(scale[k])):
        return {}
    unit = axes[k].unit
    if unit and unit not in _LENGTHS:  # OME's default, µm, would be wrong
        return {}
    out: dict = {f"PhysicalSize{letter}": float(scale[k]) * abs(step)}
    if unit:
        out[f"PhysicalSize{letter}Unit"] = _LENGTHS[unit][0]
    return out


def _ome_color(rgb) -> int:
    """OME's Color: RGBA in a signed 32-bit integer."""
    value = (rgb[0] << 24) | (rgb[1] << 16) | (rgb[2] << 8) | 255
    return value - (1 << 32) if value >= 1 << 31 else value


def ome_options(level, items: list, shape: tuple) -> dict | None:
    """tifffile's ``imwrite`` options of the OME-TIFF of ``array[items]`` (:func:`ome_metadata`
    and the pixel size as resolution: per centimetre for a length unit, else per unit), or
    None where OME-XML has no place for its axes."""
    ome = ome_metadata(level, items, shape)
    if ome is None:
        return None
    options = {"ome": True, "metadata": ome}
    if "PhysicalSizeX" in ome and "PhysicalSizeY" in ome:
        symbol = ome.get("PhysicalSizeXUnit")
        (x, y), cm = _per_unit(ome["PhysicalSizeY"], ome["PhysicalSizeX"], symbol)
        options.update(resolution=(x, y), resolutionunit="CENTIMETER" if cm else "NONE")
    return options


def _per_unit(height: float, width: float, symbol: str | None) -> tuple[tuple, bool]:
    """((pixels per unit across, down), True when the unit is the centimetre)."""
    to_cm = _SYMBOLS.get(symbol or "")
    if to_cm is None:
        return (1.0 / width, 1.0 / height), False
    return (1.0 / (width * to_cm), 1.0 / (height * to_cm)), True


# -- the mount's composite --------------------------------------------------------------------
def composite_tags(level, array, prefix: tuple, channels: tuple) -> tuple[Tag, ...]:
    """The tags of the RGB composite ``.tif`` of the plane at ``prefix`` (``None`` at the
    channel axis) of ``array``, a level of an OME-Zarr image, blending ``channels`` (the active
    ``engine.Channel``\\ s): OME-XML, the resolution, and the blend's name as ImageJ's label."""
    height, width = tuple(array.shape)[-2:]
    ndim = len(array.shape)
    sizes = _physical_size(level, ndim - 1, "X") | _physical_size(level, ndim - 2, "Y")
    axes = level.image.multiscale.axes
    for k, axis in enumerate(axes[: ndim - 2]):  # the z step, as ImageJ's spacing elsewhere
        if axis.name.lower() == "z" and axis.type in (None, "space"):
            sizes |= _physical_size(level, k, "Z")
    blended = "composite of " + ", ".join(c.label for c in channels) if channels else "composite"
    where = ", ".join(f"{a.name}={i}" for a, i in zip(axes, prefix, strict=False) if i is not None)
    name = f"{array.path or '/'} {blended}" + (f" at {where}" if where else "")
    import tifffile

    omexml = tifffile.OmeXml(Creator="zarrfs", UUID=str(uuid.uuid5(_UUIDS, name)))
    omexml.addimage(
        np.uint8,
        (height, width, 3),
        (1, 1, 1, height, width, 3),
        axes="YXS",
        Name=name,
        Channel={"Name": [blended]},
        MapAnnotation=_blend_annotation(channels),
        **sizes,
    )
    tags = [Tag(_DESCRIPTION, ASCII, omexml.tostring(declaration=True))]
    if "PhysicalSizeX" in sizes and "PhysicalSizeY" in sizes:
        (x, y), cm = _per_unit(
            sizes["PhysicalSizeY"], sizes["PhysicalSizeX"], sizes.get("PhysicalSizeXUnit")
        )
        tags += [
            Tag(_X_RESOLUTION, RATIONAL, rational(x)),
            Tag(_Y_RESOLUTION, RATIONAL, rational(y)),
            Tag(_RESOLUTION_UNIT, SHORT, (_CENTIMETER if cm else _NONE,)),
        ]
    tags += imagej_channels((), label=blended)
    return tuple(sorted(tags, key=lambda t: t.code))


def _blend_annotation(channels: tuple) -> dict:
    """``{channel name: "color #RRGGBB, window start..end"}`` of the blended channels."""
    out: dict = {}
    for k, channel in enumerate(channels):
        key = channel.label if channel.label not in out else f"{channel.label} ({k})"
        text = "color #{:02X}{:02X}{:02X}".format(*channel.color)
        if channel.window is not None:
            text += f", window {channel.window.start:g}..{channel.window.end:g}"
        else:
            text += ", window: the plane's own range"
        out[key] = text
    return out
