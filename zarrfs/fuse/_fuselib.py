"""The one place that imports the FUSE binding.

mfusepy loads libfuse2 when both libfuse2 and libfuse3 are installed unless ``FUSE_LIBRARY_NAME``
says otherwise, so we ask for libfuse3 before importing (a user's own setting wins). fusepy with
libfuse2 is the fallback when mfusepy is missing (fusepy ignores ``FUSE_LIBRARY_NAME``). Nothing else in zarrfs imports a FUSE binding.
"""

from __future__ import annotations

import os

os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")

try:
    import mfusepy as _binding

    BINDING = "mfusepy"
except ImportError:  # pragma: no cover - exercised only where mfusepy is absent
    import fuse as _binding  # type: ignore[no-redef]

    BINDING = "fusepy"

FUSE = _binding.FUSE
FuseOSError = _binding.FuseOSError
Operations = _binding.Operations
fuse_get_context = _binding.fuse_get_context

#: Major version of the loaded libfuse (2 or 3).
FUSE_MAJOR_VERSION: int = int(getattr(_binding, "fuse_version_major", 2))

__all__ = ["BINDING", "FUSE", "FUSE_MAJOR_VERSION", "FuseOSError", "Operations", "fuse_get_context"]
