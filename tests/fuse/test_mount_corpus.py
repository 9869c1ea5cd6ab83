"""Every array of the conformance corpus, read back through a real mount, equals what its writer
stored: data.npy (numpy.load, memory-mapped), data.raw, data.tif (tifffile), plane files, and
data.json for variable-length arrays. Local stores, the loopback HTTP server and S3 (moto)."""

from __future__ import annotations

import base64
import importlib.util
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import tifffile

from tests.conftest import find_corpus_dir
from tests.fuse.conftest import needs_fuse
from zarrfs.fuse.layout import axis_labels, plane_entry_name
from zarrfs.tiff import supports_tiff

pytestmark = [needs_fuse, pytest.mark.fuse]


def _manifest():
    path = find_corpus_dir() / "manifest.json"
    return json.loads(path.read_text()) if path.is_file() else {"entries": []}


def _arrays_by_store() -> dict[str, list[dict]]:
    stores: dict[str, list[dict]] = defaultdict(list)
    for entry in _manifest()["entries"]:
        if entry["kind"] == "array" and not entry.get("nonconformant"):
            stores[entry["store"]].append(entry)
    return dict(sorted(stores.items()))


STORES = _arrays_by_store()


@pytest.fixture(scope="module")
def checker(corpus_dir):
    spec = importlib.util.spec_from_file_location("check_reader", corpus_dir / "check_reader.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_array(root: Path, entry: dict, checker, corpus_dir: Path) -> list[str]:
    """Read one array through the mount; return the failures (empty when all agree)."""
    folder = root / entry["path"] if entry["path"] else root
    spec = entry["expected"]
    expected = checker.load_expected(str(corpus_dir), spec)
    fmt = spec["format"]
    exact = bool(entry.get("exact_bits"))
    failures = []

    def check(name, result, want=expected):
        status, detail = checker.compare(result, want, fmt, exact_bits=exact)
        if status != "pass":
            failures.append(f"{entry['id']} {name}: {status} {detail}")

    if fmt != "npy":
        data = json.loads((folder / "data.json").read_text())
        if fmt == "json-bytes":
            data = checker._map_nested(data, base64.b64decode)
        check("data.json", data)
        return failures
    npy_path = folder / "data.npy"
    mapped = np.load(npy_path, mmap_mode="r") if expected.size else np.load(npy_path)
    check("data.npy", np.array(mapped))
    raw = (folder / "data.raw").read_bytes()
    header = npy_path.stat().st_size - len(raw)
    if raw != npy_path.read_bytes()[header:]:
        failures.append(f"{entry['id']} data.raw differs from the data part of data.npy")
    if expected.ndim == 2 and supports_tiff(mapped.dtype, expected.shape):
        check("data.tif", tifffile.imread(folder / "data.tif").view(mapped.dtype))
    if expected.ndim >= 3 and expected.size:
        failures += _check_last_plane(folder, entry, mapped.dtype, expected, check)
    return failures


def _check_last_plane(folder, entry, dtype, expected, check) -> list[str]:
    meta_labels = _labels(folder, expected.ndim)
    index = tuple(n - 1 for n in expected.shape[:-2])
    parts = [plane_entry_name(meta_labels[k], i, expected.shape[k]) for k, i in enumerate(index)]
    plane_dir = folder.joinpath("planes", *parts[:-1])
    want = expected[index]
    check("plane.npy", np.load(plane_dir / f"{parts[-1]}.npy"), want)
    if supports_tiff(dtype, want.shape):
        check("plane.tif", tifffile.imread(plane_dir / f"{parts[-1]}.tif").view(dtype), want)
    return []


def _labels(folder: Path, ndim: int) -> list[str]:
    """The axis labels the mount uses: read back from the planes/ listing itself."""
    labels, level = [], folder / "planes"
    for _ in range(ndim - 2):
        first = sorted(level.iterdir())[0]
        labels.append(first.name.rsplit(".", 1)[0].rsplit("_", 1)[0])
        level = first
    return labels or axis_labels(ndim, None)


@pytest.mark.parametrize("store", list(STORES), ids=lambda s: s.removeprefix("corpus/"))
def test_corpus_local(store, mount, corpus_dir, checker):
    mounted = mount(corpus_dir / store)
    failures = []
    for entry in STORES[store]:
        failures += check_array(mounted.path, entry, checker, corpus_dir)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("store", list(STORES), ids=lambda s: s.removeprefix("corpus/"))
def test_corpus_http(store, mount, corpus_dir, checker, http_server):
    server = http_server(corpus_dir / store)
    mounted = mount(server.url_for(""))
    failures = []
    for entry in STORES[store]:
        failures += check_array(mounted.path, entry, checker, corpus_dir)
    assert not failures, "\n".join(failures)
    assert server.stats.requests, "the mount read nothing from the server"


@pytest.mark.parametrize("store", list(STORES), ids=lambda s: s.removeprefix("corpus/"))
def test_corpus_s3(store, mount, corpus_dir, checker, s3_store):
    url, storage_options = s3_store(corpus_dir / store)
    mounted = mount(url, storage_options=storage_options)
    failures = []
    for entry in STORES[store]:
        failures += check_array(mounted.path, entry, checker, corpus_dir)
    assert not failures, "\n".join(failures)
