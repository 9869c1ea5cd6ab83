"""Generated file contents whose size depends on the data: JSON, CSV and PNG previews.

These are produced by decoding the whole array (or plane) when the file is opened, so they are
either opt-in (``-o csv``, ``-o png``) or the only sane form of the data (``data.json`` of
variable-length strings/bytes, which have no fixed byte layout). Their ``st_size`` is 0 until the
content has been generated once.
"""

from __future__ import annotations

import io
import json

import numpy as np

import zarrfs.engine as engine

from ..csv_text import write_csv


def json_bytes(values: np.ndarray) -> bytes:
    """Nested JSON lists; ``bytes`` elements become base64 strings (JSON has no bytes), as
    everywhere (``engine.json_value``)."""
    data = engine.json_value(values.tolist())
    return (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf8")


def csv_bytes(values: np.ndarray) -> bytes:
    """The array as ``zarrfs get -o x.csv`` writes it (``zarrfs.csv_text``)."""
    out = io.StringIO(newline="")
    write_csv(values, out)
    return out.getvalue().encode("utf8")


def preview_values(array, selection, decode: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """What a PNG preview of ``array[selection]`` draws: for a CF variable with missing values
    or packing, floats with NaN where a value is missing (the stored numbers, or with
    ``decode`` the decoded ones), so that no fill value takes part in the stretch; a map whose
    rows run south to north flipped north up, as the viewer draws it. Returns the values and
    where they are missing (None: nowhere)."""
    stored = np.asarray(array.read(selection))
    var = engine.cf.variable(array)
    values, missing = stored, None
    if var.time is None and (var.packing or var.masking) and stored.dtype.kind in "iuf":
        decoded = engine.cf.decode(var, stored)
        missing = np.isnan(decoded)
        values = decoded if decode else np.where(missing, np.nan, stored)
    if values.ndim >= 2 and engine.cf.north_up(array):
        values = values[..., ::-1, :]
        missing = None if missing is None else missing[..., ::-1, :]
    return values, missing


def preview_png(plane: np.ndarray, missing: np.ndarray | None = None) -> bytes:
    """An 8-bit grayscale PNG with automatic contrast (0.5-99.5 percentiles of finite values;
    for integers, of the values themselves, so that 64-bit levels are not rounded together).
    ``missing`` (a CF variable's missing values) is transparent: the PNG then has an alpha
    channel."""
    from PIL import Image  # Pillow encodes; imported on first use: previews are opt-in

    values = np.asarray(plane)
    if values.dtype == bool:
        scaled = values.astype(np.uint8) * 255
    elif values.dtype.kind in "iu":
        scaled = _scaled_integers(values)
    else:
        scaled = _scaled_floats(values.astype(np.float64))
    out = io.BytesIO()
    image = Image.fromarray(np.ascontiguousarray(scaled))
    if missing is not None and missing.any():
        alpha = np.where(missing, 0, 255).astype(np.uint8)
        image = Image.merge("LA", (image, Image.fromarray(np.ascontiguousarray(alpha))))
    image.save(out, format="PNG")
    return out.getvalue()


def _scaled_integers(values: np.ndarray) -> np.ndarray:
    """0-255 from integers of any width: mapped in order onto uint64 (signed values offset by
    2**63), so that neither the percentiles nor the differences lose a bit or overflow."""
    unsigned = values.astype(np.uint64)
    if values.dtype.kind == "i":
        unsigned ^= np.uint64(1 << 63)
    low, high = np.percentile(unsigned, [0.5, 99.5], method="nearest")
    if high <= low:
        return np.zeros(values.shape, np.uint8)
    offset = np.clip(unsigned, low, high) - low  # in [0, high - low]: no wrap-around
    return (offset.astype(np.float64) * (255.0 / float(high - low))).round().astype(np.uint8)


def _scaled_floats(floats: np.ndarray) -> np.ndarray:
    """0-255 from float64: NaN and -inf 0, +inf 255, a constant plane 0. A range wider than
    float64 holds (``-1e308..1e308``) is scaled in halves."""
    finite = floats[np.isfinite(floats)]
    if not finite.size:
        return np.where(floats == np.inf, 255, 0).astype(np.uint8)
    # "nearest": values of the data, no interpolation that could overflow between extremes
    low, high = np.percentile(finite, [0.5, 99.5], method="nearest")
    if high <= low:
        return np.where(floats > low, 255, 0).astype(np.uint8)
    with np.errstate(over="ignore", invalid="ignore"):  # values past the percentiles: clipped
        span = high - low
        if np.isinf(span):  # halves: each difference then fits
            normalized = (floats / 2 - low / 2) / (high / 2 - low / 2)
        else:
            normalized = (floats - low) / span
    normalized = np.clip(normalized, 0.0, 1.0)
    return np.nan_to_num(normalized * 255.0, nan=0.0).round().astype(np.uint8)
