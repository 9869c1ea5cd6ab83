"""Engine values as JSON values: one convention for ``zarrfs info --json``, the mount's JSON
files and the viewer's metadata panel.

JSON has no bytes, no NaN and no complex numbers. The spellings are those of the Zarr v3 core
spec's ``fill_value`` encoding: bytes (and raw or structured values) as base64, ``"NaN"``,
``"Infinity"`` and ``"-Infinity"`` for the special floats, a complex number as
``[real, imaginary]``; datetimes as NumPy prints them.
"""

from __future__ import annotations

import base64
import math

import numpy as np


def json_value(value):
    """``value`` (a NumPy scalar or array, bytes, a float, nested dicts and lists ...) as a
    value ``json.dumps`` writes; anything else as its ``str``."""
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, str | bool | int) or value is None:
        return value
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, np.ndarray) and value.ndim:
        return [json_value(v) for v in value]
    if isinstance(value, np.generic | np.ndarray):
        return _numpy_scalar(np.asarray(value))
    return str(value)


def _float(f: float):
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return f


def _numpy_scalar(v: np.ndarray):
    kind = v.dtype.kind
    if v.dtype.fields is not None or kind in "VS":
        return base64.b64encode(v.tobytes()).decode("ascii")
    if kind == "c":
        return [_float(float(v.real)), _float(float(v.imag))]
    if kind == "f":
        return _float(float(v))
    if kind in "Mm":
        return str(v)
    return json_value(v.item())
