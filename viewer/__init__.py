"""The zarrfs desktop viewer (PySide6 + pyqtgraph) over the shared engine.

Importing this package imports no Qt; ``viewer.app.run`` and ``viewer.cli`` do, lazily, so that
``zarrfs --help`` stays fast and works without the ``viewer`` extra.
"""
