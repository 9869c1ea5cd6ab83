"""Export what the view shows as PNG: the screen as drawn (composite, scale bar and all), or the
plane on screen at full resolution, rendered as it is drawn (the composite with the windows on
screen; one plane with its contrast and colormap); or as TIFF, the same file as the mount's
``.tif`` of that plane ("Open plane as a file"): its values, georeferenced or calibrated alike
(``zarrfs.tiff_meta``), or for a composite on screen the mount's ``-o composite`` file of it
(``zarrfs.composite_tiff``: RGB with OME-XML naming the channels it blends).

A full-resolution export reads the whole plane of level 0, so it leaves the GUI thread as an
immutable :class:`FullPlane` request; :func:`render` runs in a worker and uses ``engine.blend``,
so a composite export equals the mount's ``-o composite`` file of that plane.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np

import zarrfs.engine as engine

from . import coastline_data, missing_colour, transforms
from .cf_display import CFValues
from .coastline_data import Polylines


@dataclass(frozen=True)
class FullPlane:
    """Everything the worker needs to render the plane on screen at full resolution."""

    array: object  # level 0
    selection: tuple  # the plane; a slice at the channel axis for a composite
    transpose: bool  # rows are a later axis than columns
    colors: tuple = ()  # composite: per visible channel
    windows: tuple = ()
    channels: tuple[int, ...] = ()  # composite: the visible channels
    levels: tuple[float, float] | None = None  # one plane: its contrast ...
    lut: np.ndarray | None = None  # ... and colormap (256 x 3 uint8)
    field_name: str | None = None
    complex_mode: str = "magnitude"
    cf: CFValues | None = None  # a CF variable's values: decoded (or raw) as on screen
    north_up: bool = False  # row 0 drawn at the bottom, as on screen (a map read north up)
    missing: str = missing_colour.DEFAULT  # how missing values look (View > Missing values)
    coastlines: tuple | None = None  # a map's (x, y) coordinates: its coastlines drawn over it


def full_plane(shown) -> FullPlane | None:
    """The request for the plane an image view shows (its ``shown()``, None: nothing)."""
    if shown is None:
        return None
    state, channels = shown.state, shown.channels
    selection = tuple(
        slice(None)
        if a in (state.y_axis, state.x_axis) or (channels is not None and a == channels.axis)
        else state.indices[a]
        for a in range(state.ndim)
    )
    common = dict(
        array=shown.array,
        selection=selection,
        transpose=state.y_axis > state.x_axis,
        north_up=shown.north_up,
        missing=shown.missing,
        coastlines=shown.coastlines,
    )
    if channels is not None:
        views = channels.channels
        visible = tuple(k for k, c in enumerate(views) if c.visible)
        return FullPlane(
            **common,
            channels=visible,
            colors=tuple(views[k].color for k in visible),
            windows=tuple(views[k].window or views[k].auto_window or (0, 1) for k in visible),
        )
    return FullPlane(
        **common,
        levels=shown.levels,
        lut=shown.lut,
        field_name=state.field_name,
        complex_mode=state.complex_mode,
        cf=shown.cf,
    )


def render(request: FullPlane) -> np.ndarray:
    """The RGB ``uint8`` picture of the request's plane (runs in a worker), as the screen
    draws it: missing values in the colour seen through them (``missing_colour``), a map's
    coastlines over it."""
    values = request.array.read(request.selection)
    if request.transpose:
        values = np.swapaxes(values, -1, -2)
    if request.north_up:
        values = values[..., ::-1, :]
    rgb = _colour(request, values)
    if request.coastlines is not None:
        lines = coastline_data.over_plane(*request.coastlines)
        rgb = draw_lines(rgb, lines, request.north_up)
    return rgb


def _colour(request: FullPlane, values: np.ndarray) -> np.ndarray:
    if request.levels is None:  # a composite: (channels, rows, cols)
        if not request.channels:
            return np.zeros(values.shape[1:] + (3,), np.uint8)
        planes = [values[k] for k in request.channels]
        return engine.blend(planes, request.colors, request.windows)
    if request.cf is not None:
        shown = request.cf.to_display(values)
    else:
        shown = transforms.to_display(
            values, field_name=request.field_name, complex_mode=request.complex_mode
        )
    low, high = request.levels
    scaled = engine.scale_to_window(shown, low, high if high != low else low + 1)
    rgb = request.lut[np.rint(scaled * 255).astype(np.uint8)]
    if shown.dtype.kind == "f":
        missing_colour.paint(rgb, np.isnan(shown), request.missing)
    return rgb


def draw_lines(rgb: np.ndarray, lines: Polylines, north_up: bool) -> np.ndarray:
    """``rgb`` with ``lines`` (positions on the plane: element ``i`` over ``[i, i + 1)``)
    drawn one pixel wide in the coastlines' colour, as the screen draws them over the plane."""
    from PIL import Image, ImageDraw

    image = Image.fromarray(np.ascontiguousarray(rgb), mode="RGB")
    pen = ImageDraw.Draw(image)
    height = rgb.shape[0]
    for x, y in lines.runs():
        rows = (height - y if north_up else y) - 0.5  # PIL's pixel centres are whole numbers
        pen.line(
            list(zip((x - 0.5).tolist(), rows.tolist(), strict=True)), fill=coastline_data.COLOUR
        )
    return np.asarray(image)


def plane_tiff(view) -> tuple[object, tuple[int | None, ...]]:
    """(level 0, the indices before the plane) of the plane on screen, for :func:`write_tiff`
    and "Open plane as a file": ``None`` at the channel axis when a composite is on screen.
    ValueError when nothing is shown or the plane is not over the last two axes (the mount's
    plane files, which the TIFF equals, run over those)."""
    shown = view.shown()
    if shown is None:
        raise ValueError("no image to export")
    state = shown.state
    if (state.y_axis, state.x_axis) != (state.ndim - 2, state.ndim - 1):
        raise ValueError("the mount's plane files run over the last two axes: show those")
    index = list(state.indices[:-2])
    if shown.channels is not None and shown.channels.axis < len(index):
        index[shown.channels.axis] = None
    return shown.array, tuple(index)


def write_tiff(array, index: tuple[int | None, ...], path: str | Path) -> None:
    """The plane's values as the mount's ``.tif`` of it, byte for byte (runs in a worker): a
    composite (``None`` at the channel axis) as the mount's ``-o composite`` file of it."""
    from zarrfs.tiff_meta import level_of, write_plane

    if None in index:
        from zarrfs.composite_tiff import write_composite

        write_composite(path, array, level_of(array), index)
    else:
        write_plane(path, array, cast(tuple[int, ...], index))


def write_png(rgb: np.ndarray, path: str | Path) -> None:
    from PIL import Image

    Image.fromarray(np.ascontiguousarray(rgb), mode="RGB").save(str(path), format="PNG")


def screen_png(view, path: str | Path) -> None:
    """The image area as it is on screen, as a figure: its title, the plane (composite,
    overlay, scale bar) with its axes, the orthogonal views and the colour bar."""
    if not view.picture().save(str(path), "PNG"):
        raise OSError(f"cannot write {path}")
