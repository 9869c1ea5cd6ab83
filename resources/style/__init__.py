"""The viewer's Qt style sheets, installed as the package ``zarrfs.viewer.style``.

A package so that ``importlib.resources`` finds them in a wheel and in an editable install alike
(setuptools' editable finder does not resolve a mapped folder without ``__init__.py``).
"""
