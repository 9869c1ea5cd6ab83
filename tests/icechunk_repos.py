"""Icechunk repositories written at test time by Icechunk itself (with zarr-python), and what
each of their versions holds, for the engine, CLI, mount and viewer tests.

``write_history``: several commits on ``main``, a branch ``experiment`` with a commit of its own,
a tag ``v1``; ``History.values[snapshot_id][array path]`` is what was written as of each snapshot
(tracked in NumPy as it was written, never read back). ``write_virtual``: a repository whose
chunks point into an HDF5 (netCDF-4 style) file written by h5py, on disk, in a bucket of moto's S3
server (``write_virtual_s3``) or on the loopback HTTP server (``write_virtual_http``).
"""

from __future__ import annotations

import copy
import datetime
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

icechunk = pytest.importorskip("icechunk")
zarr = pytest.importorskip("zarr")


@dataclass
class History:
    path: Path
    #: snapshot id -> {array path: its values as of that snapshot}
    values: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # snapshot ids as committed


def _commit(history: History, session, message: str, state: dict) -> str:
    sid = session.commit(message)
    history.values[sid] = copy.deepcopy(state)
    history.messages[sid] = message
    history.order.append(sid)
    return sid


def write_history(root: Path) -> History:
    """main: "create" (g/temp, counts, stack), "warm the corner" (also stack[2, 3:, 4:]), "double"; experiment (from "warm
    the corner"): "add extra"; tag v1 at "warm the corner"."""
    history = History(root)
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(root)))
    rng = np.random.default_rng(31)
    temp = rng.standard_normal((6, 8)).astype("float32")
    counts = np.arange(10, dtype="int16")

    session = repo.writable_session("main")
    group = zarr.group(store=session.store, attributes={"title": "versioned"})
    g = group.create_group("g")
    g.create_array("temp", shape=temp.shape, chunks=(3, 4), dtype="float32", fill_value=0)[:] = temp
    group.create_array("counts", shape=counts.shape, chunks=(4,), dtype="int16", fill_value=-1)[
        :
    ] = counts
    stack = rng.integers(0, 1000, size=(4, 6, 8), dtype="uint16")
    group.create_array("stack", shape=stack.shape, chunks=(1, 3, 4), dtype="uint16")[:] = stack
    sparse = np.zeros(8, dtype="int32")  # chunks never written: the fill value, absent keys
    sparse[2:4] = 5
    group.create_array("sparse", shape=(8,), chunks=(2,), dtype="int32", fill_value=0)[2:4] = 5
    state = {"g/temp": temp.copy(), "counts": counts.copy(), "stack": stack.copy()}
    state["sparse"] = sparse
    _commit(history, session, "create", state)

    session = repo.writable_session("main")
    state["g/temp"][0:3, 0:4] += 100
    zarr.open_array(session.store, path="g/temp")[0:3, 0:4] = state["g/temp"][0:3, 0:4]
    state["stack"][2, 3:, 4:] = 7
    zarr.open_array(session.store, path="stack")[2, 3:, 4:] = 7
    warm = _commit(history, session, "warm the corner", state)
    repo.create_tag("v1", warm)
    repo.create_branch("experiment", warm)

    session = repo.writable_session("main")
    state["g/temp"] *= 2
    zarr.open_array(session.store, path="g/temp")[:] = state["g/temp"]
    main_tip = _commit(history, session, "double", state)

    session = repo.writable_session("experiment")
    exp = copy.deepcopy(history.values[warm])
    exp["g/temp"][3:, 4:] = -1
    exp["g/extra"] = np.full((5,), 7, dtype="uint8")
    zarr.open_array(session.store, path="g/temp")[3:, 4:] = -1
    zarr.open_group(session.store, path="g").create_array(
        "extra", shape=(5,), chunks=(5,), dtype="uint8", fill_value=0
    )[:] = exp["g/extra"]
    exp_tip = _commit(history, session, "add extra", exp)

    history.branches = {"main": main_tip, "experiment": exp_tip}
    history.tags = {"v1": warm}
    return history


@dataclass
class Virtual:
    path: Path  # the repository
    data_file: Path  # the HDF5 file its chunks point into
    values: np.ndarray  # what the file's dataset holds (array "temperature")


def write_netcdf(data_dir: Path) -> tuple[Path, np.ndarray, int]:
    """An HDF5 file (h5py; a contiguous dataset, as netCDF-4 writes one): its path, the values
    of its ``temperature`` (4 x 6 float32) and their byte offset in it."""
    h5py = pytest.importorskip("h5py")
    data_dir.mkdir(parents=True, exist_ok=True)
    data_file = data_dir / "surface.nc"
    values = (np.arange(24, dtype="<f4").reshape(4, 6) * 1.5 - 3).astype("<f4")
    with h5py.File(data_file, "w") as f:
        dset = f.create_dataset("temperature", data=values)  # contiguous, uncompressed
        f.flush()
        offset = dset.id.get_offset()
    return data_file, values, offset


def write_virtual(root: Path, data_dir: Path) -> Virtual:
    """A repository whose array ``temperature`` (4 x 6 float32, chunks 2 x 6) points into a
    netCDF-4 file on disk (``write_netcdf``): one virtual reference per chunk, each with the
    file's modification time, so a file changed since reads as an error, never as other
    bytes."""
    data_file, values, offset = write_netcdf(data_dir)
    prefix = f"file://{data_dir}/"
    store = icechunk.local_filesystem_store(str(data_dir))
    repo = _virtual_repo(root, prefix, store, {prefix: None})
    written = datetime.datetime.fromtimestamp(data_file.stat().st_mtime, datetime.UTC)
    _refer(repo, f"{prefix}{data_file.name}", offset, written + datetime.timedelta(seconds=1))
    return Virtual(root, data_file, values)


def write_virtual_s3(
    root: Path, data_dir: Path, s3_server, *, endpoint: bool = True
) -> tuple[Virtual, str]:
    """The same, the netCDF file in a bucket of moto's S3 server, each reference with the
    object's ETag: (the repository, the URL of the file). ``endpoint``: the container names the
    server's endpoint (else none, as a writer for AWS leaves it, and a reader gives it). Reading
    it needs the S3 server's storage options."""
    from tests.s3server import KEY, REGION, SECRET

    data_file, values, offset = write_netcdf(data_dir)
    bucket = s3_server.create_bucket()
    client = s3_server.client()
    client.put_object(Bucket=bucket, Key="nc/surface.nc", Body=data_file.read_bytes())
    etag = client.head_object(Bucket=bucket, Key="nc/surface.nc")["ETag"]
    prefix = f"s3://{bucket}/"
    where = {"endpoint_url": s3_server.endpoint_url, "allow_http": True} if endpoint else {}
    store = icechunk.s3_store(region=REGION, s3_compatible=True, force_path_style=True, **where)
    credentials = icechunk.s3_credentials(access_key_id=KEY, secret_access_key=SECRET)
    authorized = icechunk.containers_credentials({prefix: credentials})
    repo = _virtual_repo(root, prefix, store, authorized)
    _refer(repo, f"{prefix}nc/surface.nc", offset, etag)
    return Virtual(root, data_file, values), f"{prefix}nc/surface.nc"


def write_virtual_http(root: Path, data_dir: Path, http_server) -> tuple[Virtual, object]:
    """The same, the netCDF file served over HTTP by the loopback server (which sends ETags),
    each reference with the file's ETag: (the repository, the server). Icechunk (1.1) drops
    the port of an ``http://`` location, so the locations name ``http://127.0.0.1/`` and the
    container's HTTP store reaches the server as its proxy (it serves absolute-form requests),
    as written, without ``allow_http``: a reader allows it for an ``http://`` container."""
    data_file, values, offset = write_netcdf(data_dir)
    server = http_server(data_dir)
    server.etags = True
    request = urllib.request.Request(server.url_for(data_file.name), method="HEAD")
    with urllib.request.urlopen(request, timeout=10) as answer:
        etag = answer.headers["ETag"]
    prefix = "http://127.0.0.1/"
    store = icechunk.http_store({"proxy_url": server.url})
    repo = _virtual_repo(root, prefix, store, {prefix: None})
    _refer(repo, f"{prefix}{data_file.name}", offset, etag)
    return Virtual(root, data_file, values), server


def _virtual_repo(root: Path, prefix: str, store, authorized: dict):
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(prefix, store))
    return icechunk.Repository.create(
        icechunk.local_filesystem_storage(str(root)),
        config=config,
        authorize_virtual_chunk_access=authorized,
    )


def _refer(repo, location: str, offset: int, checksum) -> None:
    """Array ``temperature`` whose two chunks (rows 0-1, 2-3) are ranges of ``location``."""
    session = repo.writable_session("main")
    group = zarr.group(store=session.store)
    group.create_array(
        "temperature", shape=(4, 6), chunks=(2, 6), dtype="<f4", compressors=None, fill_value=0
    )
    row_bytes = 2 * 6 * 4
    for i in range(2):
        session.store.set_virtual_ref(
            f"temperature/c/{i}/0",
            location,
            offset=offset + i * row_bytes,
            length=row_bytes,
            checksum=checksum,
        )
    session.commit("virtual references into surface.nc")
