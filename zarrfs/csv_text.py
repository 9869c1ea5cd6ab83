"""Arrays as CSV text, one convention for ``zarrfs get -o x.csv`` and the mount's ``data.csv``.

Through the ``csv`` module, so that text with commas, quotes, newlines or NULs reads back
exactly. Text is always quoted: with minimal quoting and ``\\n`` line ends, a lone ``\\r`` would
go unquoted and split a row. Floats are written in full precision (``%.17g`` round-trips
float64), complex numbers as ``(re+imj)`` likewise, bytes as their ``b'...'`` form (every byte
kept, NULs included), dates and durations as NumPy prints them, anything else as ``str``.
"""

from __future__ import annotations

import csv
from typing import TextIO

import numpy as np


def write_csv(values: np.ndarray, stream: TextIO) -> None:
    """One line per row of a 1-D (one column) or 2-D array; ``stream`` opened with
    ``newline=""``."""
    kind = values.dtype.kind
    rows = values.reshape(-1, 1) if values.ndim < 2 else values
    if kind not in "Mm":  # Python scalars format faster; dates and durations keep NumPy's text
        rows = rows.tolist()
    cell = _CELLS.get(kind, str)
    writer = csv.writer(
        stream, lineterminator="\n", quoting=csv.QUOTE_ALL if kind in "OUS" else csv.QUOTE_MINIMAL
    )
    if values.size:
        writer.writerows([cell(v) for v in row] for row in rows)


def _complex_cell(value) -> str:
    return f"({value.real:.17g}{value.imag:+.17g}j)"


#: how one value is written, by dtype kind (anything not here: ``str``, which writes integers
#: exactly and bytes as ``b'...'``)
_CELLS = {
    "f": lambda v: format(v, ".17g"),
    "c": _complex_cell,
}
