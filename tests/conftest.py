"""Fixtures every test package shares: loopback HTTP, S3 and Azure servers, the conformance corpus,
and zarr-python as the oracle writer.

Servers started here are always shut down in ``finally``, even when the test fails.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.azurite import AzuriteServer
from tests.s3server import S3Server
from tests.servers import HttpServer
from tests.zarr_oracle import WrittenArray, write_array
from zarrfs.engine.store_obstore import forget_stores

REPO_ROOT = Path(__file__).resolve().parents[1]


def pytest_sessionstart(session):
    """dask.array imported while the collector is on. dask wraps ``slice_array`` in one
    ``dask.utils.disable_gc()`` made at import, which notes whether the collector is on then
    and, if it was off, leaves it off after every call. The viewer's tests turn it off (the
    viewer collects on its GUI thread) and one of them imported dask meanwhile: with the
    viewer's tests first, ngff-zarr's writer (dask) then left the collector off for good, and
    the engine's collector tests failed. Not our code's doing; our own pauses are tested."""
    try:
        import dask.array  # noqa: F401
    except ImportError:
        pass


@pytest.fixture
def http_server():
    """Factory: ``http_server(source, latency=0.0) -> HttpServer`` (started; closed after).

    ``source`` is a directory, a dict key -> bytes, ``generate(key) -> bytes | None`` or a list
    of these. The server has ``.url``, ``.url_for(key)``, ``.stats``, ``.faults``, ``.latency``.
    """
    servers: list[HttpServer] = []

    def start(source: object, latency: float = 0.0) -> HttpServer:
        server = HttpServer(source, latency=latency)
        servers.append(server)
        return server.start()

    try:
        yield start
    finally:
        for server in servers:
            server.close()
        # no pooled connection to a closed server (a later one may reuse its port)
        forget_stores()


@pytest.fixture(scope="session")
def s3_server():
    """One moto S3 server for the session, with dummy AWS credentials in the environment."""
    server = S3Server()
    try:
        yield server.start()
    finally:
        server.close()


@pytest.fixture
def s3_store(s3_server):
    """Factory: ``s3_store(local_dir, prefix="store") -> (s3_url, storage_options)``.

    Every call uploads into a fresh bucket, so tests never see each other's objects.
    """

    def upload(local_dir: str | Path, prefix: str = "store") -> tuple[str, dict]:
        url = s3_server.upload_dir(local_dir, prefix=prefix)
        return url, s3_server.storage_options()

    return upload


@pytest.fixture(scope="session")
def azurite():
    """One Azurite blob service for the session (a free port, a temporary folder)."""
    server = AzuriteServer()
    try:
        yield server.start()
    finally:
        server.close()


@pytest.fixture
def azure_store(azurite):
    """Factory: ``azure_store(local_dir, prefix="store") -> (az_url, storage_options)``, the
    options with the account key; every call uploads into a fresh container."""

    def upload(local_dir: str | Path, prefix: str = "store") -> tuple[str, dict]:
        return azurite.upload_dir(local_dir, prefix=prefix), azurite.storage_options()

    return upload


#: the public conformance corpus, copied into the repository (see its PROVENANCE.md)
CORPUS_DIR = Path(__file__).resolve().parent / "conformance"


def find_corpus_dir() -> Path:
    """``tests/conformance`` in this repository, or $ZARRFS_CONFORMANCE (another copy)."""
    override = os.environ.get("ZARRFS_CONFORMANCE")
    return Path(override) if override else CORPUS_DIR


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The conformance corpus (README.md, manifest.json, corpus/)."""
    path = find_corpus_dir()
    if not (path / "manifest.json").is_file():
        pytest.fail(
            f"conformance corpus not found at {path} (no manifest.json): it ships in "
            "tests/conformance; unset ZARRFS_CONFORMANCE or point it at a full copy",
            pytrace=False,
        )
    return path


@pytest.fixture
def zarr_writer(tmp_path):
    """Factory: ``zarr_writer(data, path="array", **options) -> WrittenArray``.

    Writes with zarr-python into ``tmp_path/"store.zarr"`` (one store per test unless
    ``root=`` is given); options are those of :func:`tests.zarr_oracle.write_array`.
    """

    def write(data, path: str = "array", root: Path | None = None, **options) -> WrittenArray:
        return write_array(root or tmp_path / "store.zarr", data, path=path, **options)

    return write


@pytest.fixture(scope="session")
def ome_images(tmp_path_factory):
    """Factory: ``ome_images(writer, version) -> WrittenImage`` (``tests/ome_writers.py``),
    each written once per session by the real tool."""
    from tests import ome_writers

    written: dict = {}
    writers = {
        "ome-zarr-py": ome_writers.write_ome_zarr_py,
        "ngff-zarr": ome_writers.write_ngff_zarr,
    }

    def get(writer: str, version: str):
        key = (writer, version)
        if key not in written:
            directory = tmp_path_factory.mktemp(f"{writer}-{version}")
            written[key] = writers[writer](directory, version)
        return written[key]

    return get


@pytest.fixture
def set_native():
    """``engine.set_native`` for one test; the process's own setting comes back after it."""
    from zarrfs.engine import native

    was = native._switch.enabled, native._switch.reason
    yield native.set_native
    native._switch.enabled, native._switch.reason = was


@pytest.fixture(params=["native", "python", "reference"])
def both_read_paths(request, set_native, monkeypatch):
    """Run a test with the native (tensorstore) path on, then with the Python pipeline alone
    (its chunk loop compiled), then with every chunk in Python (the reference)."""
    from zarrfs.engine import chunkloop

    set_native(request.param == "native")
    monkeypatch.setattr(chunkloop, "_enabled", request.param != "reference")
    return request.param


@pytest.fixture
def python_loop(python_pipeline, monkeypatch):
    """The Python pipeline with every chunk in Python (its compiled loop off): for tests of
    the Python loops' own mechanics (in-place decoding, range reads, the lean loop)."""
    from zarrfs.engine import chunkloop

    monkeypatch.setattr(chunkloop, "_enabled", False)


@pytest.fixture
def python_pipeline(set_native):
    """The Python pipeline alone: for tests of its own mechanics (plans, counters, cache)."""
    set_native(False)
