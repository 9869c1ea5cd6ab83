"""The ``.npy`` header of an array, computed from its metadata alone.

Format: NEP 1 / ``numpy.lib.format`` — magic ``\\x93NUMPY``, version, header length, then a Python
dict literal padded with spaces to a multiple of 64 bytes and ending in ``\\n``; the C-order data
follows. Version 1.0 when the header fits in 65535 bytes, 2.0 when not, 3.0 when a structured
field name needs UTF-8. Because the header is exact, the file size is exact and byte ``k`` of the
data part maps to element ``(k - len(header)) // itemsize``.
"""

from __future__ import annotations

import struct

import numpy as np

MAGIC = b"\x93NUMPY"
ALIGNMENT = 64


def supports_npy(dtype: np.dtype) -> bool:
    """Fixed-size dtypes only: object (variable-length) arrays have no byte layout to serve."""
    return not dtype.hasobject


def npy_header(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    """Header bytes such that ``header + C-order data`` is a valid ``.npy`` file."""
    if not supports_npy(dtype):
        raise ValueError(f"dtype {dtype} has no fixed-size .npy layout")
    descr = np.lib.format.dtype_to_descr(dtype)
    text = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': {tuple(shape)!r}, }}"
    for version, length_format in (((1, 0), "<H"), ((2, 0), "<I")):
        try:
            encoded = text.encode("latin1")
        except UnicodeEncodeError:
            version, length_format, encoded = (3, 0), "<I", text.encode("utf8")
        prefix_size = len(MAGIC) + 2 + struct.calcsize(length_format)
        padding = -(prefix_size + len(encoded) + 1) % ALIGNMENT
        header_len = len(encoded) + padding + 1
        if length_format == "<H" and header_len >= 1 << 16:
            continue
        return (
            MAGIC
            + bytes(version)
            + struct.pack(length_format, header_len)
            + encoded
            + b" " * padding
            + b"\n"
        )
    raise AssertionError("unreachable: version 2.0 fits any header")
