"""Byte counts as people write and read them, one convention for the CLI, the mount and the
viewer: ``parse_size("512M")`` (K/M/G/T are powers of 1024) and ``human_size(n)``."""

from __future__ import annotations

import re

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """``"512M"`` -> bytes; K/M/G/T are powers of 1024, an optional trailing ``B`` or ``iB``.
    ValueError, saying what a size looks like, for anything else."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not match:
        raise ValueError(f"not a size: {text!r} (examples: 1048576, 512M, 2G)")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def human_size(n: int | None) -> str:
    if n is None:
        return "unknown"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover
