"""The one compiled part of zarrfs (everything else is in pyproject.toml): the Python pipeline's
per-chunk loop in C (zarrfs/engine/chunkloop.py says why). Optional: without a C compiler the
install goes on, and the same loop runs in Python."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("zarrfs.engine._chunkloop", ["zarrfs/engine/_chunkloop.c"], optional=True)
    ]
)
