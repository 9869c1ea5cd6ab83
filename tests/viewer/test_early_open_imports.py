"""The store's early open runs on a thread of its own while the GUI thread imports Qt and makes
the QApplication. What that thread imports must hold neither PySide6 nor pyqtgraph: pyqtgraph's
import there (through the label image code) deadlocked with the QApplication's making, and
``zarrfs view --screenshot`` hung in 3 runs of 14 at once."""

from __future__ import annotations

import subprocess
import sys


def test_the_early_open_imports_no_qt():
    code = (
        "import sys, zarrfs.viewer.early_open, zarrfs.viewer.pyramid\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]", result.stdout
