"""CF decoding (``engine.cf.decode``/``read_decoded``) bit for bit against xarray's decoding of
stores xarray wrote (v2 and v3): every 8- and 16-bit stored value, 32-bit and float stored
values with their extremes, NaN and infinities; scale only, offset only, both, ``_FillValue``,
a ``missing_value`` list, ``valid_range``/``valid_min``/``valid_max``. Each case runs with the
engine's thresholds as they are (small arrays: one thread, after the read) and shrunk, so that
the same small stores go through the parallel path of large decodes."""

from __future__ import annotations

import concurrent.futures
import math
import tempfile
from pathlib import Path

import hypothesis
import numpy as np
import pytest
from hypothesis import strategies as st

import zarrfs.engine as engine
from tests.cf_stores import write_encoded
from zarrfs.engine import cf, cf_decode, scheduler

xr = pytest.importorskip("xarray")
pytestmark = pytest.mark.filterwarnings("ignore::xarray.SerializationWarning")

SHAPE = (3, 120, 300)
CHUNKS = (1, 50, 128)  # edge chunks overhang on both plane axes
DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "float32", "float64"]


@pytest.fixture(params=["as_is", "shrunk"])
def thresholds(request, monkeypatch):
    """The engine's decoding thresholds as they are, or shrunk to a few hundred elements."""
    if request.param == "shrunk":
        monkeypatch.setattr(cf_decode, "_BLOCK", 500)
        monkeypatch.setattr(cf_decode, "_PARALLEL", 2_000)
    return request.param


def _stored(dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """Values covering the type: every value of an 8- or 16-bit integer (in runs, so that
    some blocks hold a fill value and others not, then a shuffled plane), the extremes of
    a 32-bit integer, and for floats NaN, infinities, -0.0 and the fill values below."""
    n = math.prod(SHAPE)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if dtype.itemsize <= 2:
            values = np.resize(np.arange(info.min, info.max + 1, dtype=dtype), n)
        else:
            values = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
            values[:4] = [info.min, info.max, 0, -1]
        values = values.reshape(SHAPE)
        rng.shuffle(values[2].reshape(-1))
        return values
    values = (rng.standard_normal(n) * 2000).astype(dtype)
    values[:7] = [np.nan, np.inf, -np.inf, -0.0, -9999.0, 17.0, 1.5]
    values[rng.integers(0, n, 500)] = -9999.0
    return values.reshape(SHAPE)


def _cases(dtype: np.dtype) -> dict:
    """name -> (attributes, _FillValue, valid range applied on top of xarray's decoding)."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        fill = int(info.min) if dtype.kind == "i" else int(info.max)
        missing = [int(info.min) + 3, int(info.max) - 5]
        low, high = int(info.min) // 2 + 7, int(info.max) // 2 - 3
    else:
        fill, missing, low, high = -9999.0, [17.0, 1.5], -1500.0, 1500.0
    return {
        "scale": ({"scale_factor": 0.01}, None, None),
        "offset": ({"add_offset": 273.15}, None, None),
        "both": ({"scale_factor": 0.1, "add_offset": -5.5}, None, None),
        "fill": ({}, fill, None),
        "fill_packed": ({"scale_factor": 0.01, "add_offset": 273.15}, fill, None),
        "missing_list": ({"scale_factor": 2.5, "missing_value": missing}, fill, None),
        "valid_range": ({"valid_range": [low, high]}, None, (low, high)),
        "valid_min": ({"valid_min": low, "scale_factor": 0.5}, fill, (low, None)),
        "valid_max": ({"valid_max": high, "add_offset": 1.0e6}, None, (None, high)),
    }


def _write(tmp_path: Path, dtype: str, zarr_format: int) -> tuple[Path, dict, dict]:
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(21)
    cases = _cases(dtype)
    variables, ranges = {}, {}
    for name, (attrs, fill, valid) in cases.items():
        stored = _stored(dtype, rng)
        if fill is not None:  # a whole chunk of fill: xarray leaves it out of the store
            stored[0, : CHUNKS[1], : CHUNKS[2]] = fill
        variables[name] = (stored, attrs, fill)
        ranges[name] = valid
    url = write_encoded(tmp_path / f"{dtype}-v{zarr_format}.zarr", variables, zarr_format, CHUNKS)
    return url, {n: v[0] for n, v in variables.items()}, ranges


def _expected(values: np.ndarray, stored: np.ndarray, valid, dtype: np.dtype) -> np.ndarray:
    """xarray's decoded values, with what xarray leaves unmasked out of ``valid_range``
    masked (xarray does not apply it) in the float type xarray masks into."""
    if valid is None:
        return values
    values = values.astype(dtype)
    low, high = valid
    outside = np.zeros(stored.shape, bool)
    if low is not None:
        outside |= stored < low
    if high is not None:
        outside |= stored > high
    values[outside] = np.nan
    return values


def _assert_bits(decoded: np.ndarray, expected: np.ndarray, what: str) -> None:
    """Same dtype and the same bits (NaN where NaN, -0.0 where -0.0)."""
    assert decoded.dtype == expected.dtype, what
    assert decoded.shape == expected.shape, what
    same = np.array_equal(decoded, expected, equal_nan=True)
    assert same, (
        f"{what}: {np.sum(~((decoded == expected) | (np.isnan(decoded) & np.isnan(expected))))} differ"
    )
    bits = f"u{decoded.dtype.itemsize}"
    assert np.array_equal(decoded.view(bits), expected.copy(order="C").view(bits)), what


SELECTIONS = [
    ...,
    (1,),
    (slice(None), slice(5, 117, 3), slice(None, None, -2)),
    (2, slice(40, 110), 7),
]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("dtype", DTYPES)
def test_decoded_bits_equal_xarray(tmp_path, dtype, zarr_format, thresholds):
    url, stored, ranges = _write(tmp_path, dtype, zarr_format)
    group = engine.open(str(url))
    ds = xr.open_zarr(str(url), consolidated=None)
    for name in stored:
        array = group[name]
        var = cf.variable(array)
        assert var.encoded and not var.problems, name
        assert np.array_equal(array[...], stored[name], equal_nan=True)  # raw stays raw
        expected = _expected(ds[name].values, stored[name], ranges[name], var.decoded_dtype)
        for selection in SELECTIONS:
            what = f"{dtype} v{zarr_format} {name} {selection}"
            _assert_bits(cf.read_decoded(array, selection), expected[selection], what)
        # into a strided view of a larger buffer, as a viewer's tile
        big = np.full((*SHAPE[:2], 2 * SHAPE[2]), 7.0, var.decoded_dtype)
        view = big[..., ::2]
        assert cf.read_decoded(array, ..., var, out=view) is view
        _assert_bits(view, expected, f"{dtype} v{zarr_format} {name} into a view")
        assert (big[..., 1::2] == 7.0).all()  # nothing written between its elements
        view[...] = 7.0
        assert cf.decode(var, array.read(), out=view) is view
        _assert_bits(view, expected, f"{dtype} v{zarr_format} {name} decode into a view")
        # decode of a strided view of stored values (not contiguous)
        _assert_bits(cf.decode(var, stored[name][:, ::-3]), expected[:, ::-3], f"{name} strided")


def test_a_scalar_decodes_like_xarray(tmp_path):
    variables = {
        "packed": (np.array(-7, np.int16), {"scale_factor": 0.25, "add_offset": 3.0}, None),
        "filled": (np.array(-1, np.int16), {"scale_factor": 0.25}, -1),
    }
    url = write_encoded(tmp_path / "scalar.zarr", variables, 3)
    group, ds = engine.open(str(url)), xr.open_zarr(str(url))
    for name in variables:
        var = cf.variable(group[name])
        _assert_bits(cf.read_decoded(group[name]), ds[name].values, name)
        _assert_bits(cf.decode(var, group[name].read()), ds[name].values, name)


def test_a_large_plane_decodes_like_xarray(tmp_path):
    """A plane above the engine's own threshold: decoded by the workers and the caller."""
    rng = np.random.default_rng(5)
    stored = rng.integers(-32768, 32767, (2, 1100, 1000), dtype=np.int16, endpoint=True)
    stored[0, :256, :256] = -32768  # a missing chunk
    stored[1, 700:, 100:300] = -32768
    attrs = {"scale_factor": 0.01, "add_offset": 273.15}
    url = write_encoded(tmp_path / "large.zarr", {"tas": (stored, attrs, -32768)}, 2, (1, 256, 256))
    tas = engine.open(str(url))["tas"]
    assert math.prod(tas.shape[1:]) >= cf_decode._PARALLEL
    expected = xr.open_zarr(str(url)).tas.values
    _assert_bits(cf.read_decoded(tas, 1), expected[1], "plane 1")
    out = np.empty((1100, 1000))
    _assert_bits(cf.read_decoded(tas, 0, out=out), expected[0], "plane 0 into out")
    _assert_bits(cf.read_decoded(tas), expected, "whole")
    _assert_bits(cf.decode(cf.variable(tas), tas.read()), expected, "decode whole")


def test_decode_inside_the_decode_workers_ends(tmp_path):
    """A large decode called from every decode worker at once (an ``on_chunk`` callback
    decoding a big region, say) still ends: the caller decodes the blocks no worker took."""
    var = cf.Variable(
        "x",
        ("y", "x"),
        np.dtype(np.int16),
        packing=cf.Packing(0.5, 3.0),
        masking=cf.Masking((-1,)),
    )
    stored = np.arange(2 * cf_decode._PARALLEL, dtype=np.int64).astype(np.int16).reshape(-1, 1024)
    expected = stored * 0.5 + 3.0
    expected[stored == -1] = np.nan
    futures = [
        scheduler.run_decode(lambda: cf.decode(var, stored))
        for _ in range(2 * scheduler.decode_workers())
    ]
    done, pending = concurrent.futures.wait(futures, timeout=120)
    assert not pending
    for future in done:
        _assert_bits(future.result(), expected, "decoded in a worker")


def test_read_decoded_inside_every_io_worker_ends(tmp_path, monkeypatch):
    """Large decoded reads asked from more engine I/O workers than there are: none waits for
    a background read that no free worker would run."""
    monkeypatch.setattr(cf_decode, "_PARALLEL", 2_000)
    stored = np.arange(math.prod(SHAPE), dtype=np.int32).astype(np.int16).reshape(SHAPE)
    url = write_encoded(tmp_path / "io.zarr", {"v": (stored, {"scale_factor": 0.5}, 3)}, 2, CHUNKS)
    array = engine.open(str(url))["v"]
    expected = xr.open_zarr(str(url)).v.values
    futures = [
        scheduler.run_io(lambda k=k: (k, cf.read_decoded(array, k % 3)))
        for k in range(3 * max(8, 2 * scheduler.decode_workers()))
    ]
    done, pending = concurrent.futures.wait(futures, timeout=120)
    assert not pending
    for future in done:
        k, decoded = future.result()
        _assert_bits(decoded, expected[k % 3], f"plane {k % 3} read in an I/O worker")


def test_concurrent_decoded_reads_each_get_their_own_stored_values(tmp_path, monkeypatch):
    """Reads in several threads at once: one borrows the kept buffer for its stored values,
    the others have their own; each decodes its own plane."""
    monkeypatch.setattr(cf_decode, "_PARALLEL", 2_000)
    shape = (3, 600, 1000)  # planes that take a while: the reads overlap
    stored = np.arange(math.prod(shape), dtype=np.int32).astype(np.int16).reshape(shape)
    variables = {"v": (stored, {"add_offset": -1.5}, None)}
    url = write_encoded(tmp_path / "t.zarr", variables, 3, (1, 100, 128))
    array = engine.open(str(url))["v"]
    expected = xr.open_zarr(str(url)).v.values
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        for _ in range(3):
            engine.clear_caches()
            futures = {k: pool.submit(cf.read_decoded, array, k % 3) for k in range(12)}
            for k, future in futures.items():
                _assert_bits(future.result(timeout=120), expected[k % 3], f"plane {k % 3}")
    # a later, smaller read reuses the kept buffer's first bytes
    _assert_bits(cf.read_decoded(array, (1, slice(0, 40))), expected[1, :40], "smaller")


def test_a_chunk_that_fails_fails_the_decoded_read(tmp_path, thresholds):
    stored = np.arange(math.prod(SHAPE), dtype=np.int32).astype(np.int16).reshape(SHAPE)
    url = write_encoded(
        tmp_path / "bad.zarr", {"v": (stored, {"scale_factor": 2.0}, None)}, 2, CHUNKS
    )
    (url / "v" / "1.1.1").write_bytes(b"not blosc")
    array = engine.open(str(url))["v"]
    with pytest.raises(engine.ChunkDecodeError):
        array.read(1)
    with pytest.raises(engine.ChunkDecodeError):
        cf.read_decoded(array, 1)
    # the chunks that did decode are right
    expected = stored[0].astype(np.float64) * 2.0
    _assert_bits(cf.read_decoded(array, 0), expected, "plane 0")


_SCALES = st.one_of(
    st.none(),
    st.sampled_from([0.01, 0.1, 2.5, -0.5, 1e-7, 3.3333333333333335, 1.0, 7.0e3]),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False).filter(lambda v: v != 0),
)
_OFFSETS = st.one_of(
    st.none(), st.floats(-1e9, 1e9, allow_nan=False, allow_infinity=False, width=64)
)


@hypothesis.settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture],
)
@hypothesis.given(
    dtype=st.sampled_from(["int8", "uint8", "int16", "uint16", "int32", "float32"]),
    scale=_SCALES,
    offset=_OFFSETS,
    fills=st.lists(st.integers(0, 255), max_size=3),
    use_fill=st.booleans(),
    zarr_format=st.sampled_from([2, 3]),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_packings_equal_xarray(
    dtype, scale, offset, fills, use_fill, zarr_format, seed, monkeypatch
):
    """Random packings: scale and offset (each maybe absent), a ``_FillValue`` and a
    ``missing_value`` list drawn from the stored values."""
    monkeypatch.setattr(cf_decode, "_BLOCK", 700)
    monkeypatch.setattr(cf_decode, "_PARALLEL", 3_000)
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        stored = rng.integers(info.min, info.max, (2, 60, 70), dtype=dtype, endpoint=True)
    else:
        stored = (rng.standard_normal((2, 60, 70)) * 1e3).astype(dtype)
    picked = [stored.reshape(-1)[i * 31] for i in fills]
    attrs: dict = {}
    if scale is not None:
        attrs["scale_factor"] = scale
    if offset is not None:
        attrs["add_offset"] = offset
    if len(picked) > 1:
        attrs["missing_value"] = [v.item() for v in picked[1:]]
    fill = picked[0].item() if picked and use_fill else None
    if not attrs and fill is None:
        attrs["scale_factor"] = 1.0
    with tempfile.TemporaryDirectory() as tmp:
        url = write_encoded(
            Path(tmp) / "r.zarr", {"v": (stored, attrs, fill)}, zarr_format, (1, 25, 32)
        )
        expected = xr.open_zarr(url).v.values
        array = engine.open(str(url))["v"]
        _assert_bits(cf.read_decoded(array), expected, f"{attrs} fill {fill}")
        _assert_bits(cf.read_decoded(array, (1, slice(None, None, -1))), expected[1, ::-1], "rev")


@pytest.mark.parametrize(
    "stored, packing, expected",
    [
        ("int16", cf.Packing(0.01, 273.15), "float32"),  # ERA5-style counts
        ("uint8", cf.Packing(0.5, None), "float32"),
        ("uint16", None, "float32"),  # masked only: xarray's float32 already
        ("int16", cf.Packing(1e-9, 273.15), "float64"),  # steps float32 cannot tell apart
        ("int16", cf.Packing(1e36, None), "float64"),  # past float32's range
        ("int32", cf.Packing(0.01, None), "float64"),  # 32-bit counts need float64
        ("float64", None, "float64"),  # a float64 variable stays float64
        ("float32", cf.Packing(2.0, None), "float64"),  # xarray's float64 for packed floats
    ],
)
def test_compact_dtype_is_float32_where_it_keeps_every_value_apart(stored, packing, expected):
    masking = cf.Masking(fill_values=(0,))
    var = cf.Variable("v", ("y", "x"), np.dtype(stored), packing=packing, masking=masking)
    dtype = cf.compact_dtype(var)
    assert dtype == np.dtype(expected)
    if dtype == np.float32 and packing is not None:  # each count decodes to its own float32
        info = np.iinfo(stored)
        counts = np.arange(info.min, info.max + 1)
        values = cf.decode(var, counts.astype(stored)).astype(np.float32)
        assert np.unique(values[1:] if info.min == 0 else values).size >= counts.size - 1
