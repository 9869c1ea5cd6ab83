"""The viewer's icons (SVG), installed as the package ``zarrfs.viewer.icons``.

A package so that ``importlib.resources`` finds them in a wheel and in an editable install alike
(setuptools' editable finder does not resolve a mapped folder without ``__init__.py``).
"""
