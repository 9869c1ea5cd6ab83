"""The mount's pieces without mounting: npy headers, TIFF layouts, flat ranges -> boxes, options,
names, the virtual tree over a fake array, the errno table, generated formats."""

from __future__ import annotations

import dataclasses
import errno
import io
import subprocess
import sys

import numpy as np
import pytest
import tifffile
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import zarrfs.engine as engine
from zarrfs.fuse import formats, layout
from zarrfs.fuse.errnos import ReadOnlyError, errno_for
from zarrfs.fuse.npy import npy_header
from zarrfs.fuse.options import (
    MountOptions,
    fuse_mount_kwargs,
    parse_mount_options,
    parse_size,
)
from zarrfs.fuse.tree import VirtualTree, is_directory
from zarrfs.tiff import ASCII, DOUBLE, LONG, RATIONAL, SHORT, Tag, supports_tiff, tiff_layout

DTYPES = [
    "u1",
    "i1",
    "<u2",
    "<i2",
    "<u4",
    "<i4",
    "<u8",
    "<i8",
    "<f2",
    "<f4",
    "<f8",
    "<c8",
    "<c16",
    "?",
    "<M8[s]",
    "<m8[ms]",
    "S3",
    "<U4",
    "V5",
    [("a", "<i4"), ("b", [("c", "<f8"), ("d", "S2")])],
    [("m", "<i2", (2, 3))],
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 5), (2, 0, 4), (2, 3, 4, 5)])
def test_npy_header_loads(dtype, shape):
    dtype = np.dtype(dtype)
    pattern = (np.arange(int(np.prod(shape)) * dtype.itemsize) % 251).astype(np.uint8)
    values = np.frombuffer(pattern.tobytes(), dtype).reshape(shape)
    header = npy_header(dtype, shape)
    assert len(header) % 64 == 0
    loaded = np.load(io.BytesIO(header + values.tobytes()))
    assert loaded.dtype == dtype and loaded.shape == shape
    assert loaded.tobytes() == values.tobytes()


def test_npy_header_long_uses_version_2():
    dtype = np.dtype([(f"field_{i:05d}", "<i4") for i in range(3000)])
    header = npy_header(dtype, (2,))
    assert header[6:8] == b"\x02\x00"
    loaded = np.load(io.BytesIO(header + bytes(2 * dtype.itemsize)), max_header_size=1 << 20)
    assert loaded.dtype == dtype


@pytest.mark.parametrize(
    "dtype",
    ["u1", "<u2", "<i2", "<i4", "<u4", "<f4", "<f8", "<i8", "<u8", "<c8", "<c16", "<f2", "?"],
)
@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (700, 333)])
def test_tiff_layout_reads_back_in_tifffile(dtype, shape):
    values = (np.arange(np.prod(shape)) % 251).reshape(shape).astype(dtype)
    layout_ = tiff_layout(values.dtype, shape)
    content = layout_.prefix + values.tobytes()
    assert len(content) == layout_.size == layout_.data_offset + values.nbytes
    got = tifffile.imread(io.BytesIO(content))
    np.testing.assert_array_equal(got.view(values.dtype), values)


@pytest.mark.parametrize("dtype,mode", [("u1", "L"), ("<u2", "I;16"), ("<i4", "I"), ("<f4", "F")])
def test_tiff_layout_reads_back_in_pillow(dtype, mode):
    values = (np.arange(300 * 200) % 65521).reshape(300, 200).astype(dtype)
    layout_ = tiff_layout(values.dtype, values.shape)
    image = Image.open(io.BytesIO(layout_.prefix + values.tobytes()))
    assert image.mode == mode
    np.testing.assert_array_equal(np.asarray(image), values)


@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (700, 333)])
def test_rgb_tiff_layout_reads_back(shape):
    """``-o composite``: interleaved RGB, per-sample tags outside the IFD (classic TIFF)."""
    values = (np.arange(np.prod(shape) * 3) % 251).reshape(shape + (3,)).astype("u1")
    layout_ = tiff_layout(values.dtype, shape, samples=3)
    content = layout_.prefix + values.tobytes()
    assert len(content) == layout_.size
    np.testing.assert_array_equal(tifffile.imread(io.BytesIO(content)), values)
    image = Image.open(io.BytesIO(content))
    assert image.mode == "RGB"
    np.testing.assert_array_equal(np.asarray(image), values)


def _sparse_tiff(layout_, path):
    """The TIFF of ``layout_`` at ``path``: its header, and a sparse file standing in for the
    pixels."""
    with open(path, "wb") as file:
        file.write(layout_.prefix)
        file.truncate(layout_.size)
    return path


def test_rgb_bigtiff_keeps_per_sample_tags_inline(tmp_path):
    shape = (40_000, 40_000)  # 4.8 GB of RGB: a sparse file stands in for the pixels
    layout_ = tiff_layout(np.dtype("u1"), shape, samples=3)
    path = _sparse_tiff(layout_, tmp_path / "big.tif")
    with tifffile.TiffFile(path) as tif:
        page = tif.pages[0]
        assert tif.is_bigtiff and page.shape == shape + (3,) and page.photometric == 2
        assert sum(page.databytecounts) == 3 * 40_000 * 40_000


def test_bigtiff_when_past_4_gib(tmp_path):
    shape = (70_000, 70_000)  # 4.9 GB of uint8: a sparse file stands in for the pixels
    layout_ = tiff_layout(np.dtype("u1"), shape)
    assert layout_.bigtiff and layout_.size == layout_.data_offset + 70_000 * 70_000
    path = _sparse_tiff(layout_, tmp_path / "big.tif")
    with tifffile.TiffFile(path) as tif:
        page = tif.pages[0]
        assert tif.is_bigtiff and page.shape == shape and page.dtype == np.uint8
        assert page.dataoffsets[0] == layout_.data_offset
        assert sum(page.databytecounts) == 70_000 * 70_000


@pytest.mark.parametrize("shape", [(5, 7), (70_000, 70_000)], ids=["classic", "bigtiff"])
def test_extra_tags_read_back_in_tifffile(tmp_path, shape):
    """Extra tags of every kind (odd-length text, doubles, rationals, inline shorts, packed
    bytes) land sorted after the IFD at even offsets, in classic TIFF and BigTIFF alike."""
    tags = (
        Tag(42113, ASCII, "-32767"),  # 7 bytes with its NUL: odd
        Tag(33550, DOUBLE, (0.25, 0.5, 0.0)),
        Tag(282, RATIONAL, (40, 13)),
        Tag(296, SHORT, (1,)),
        Tag(42112, ASCII, "<GDALMetadata>\n</GDALMetadata>"),
        Tag(50838, LONG, np.array([4, 6], "=u4").tobytes()),
    )
    layout_ = tiff_layout(np.dtype("u2"), shape, tags=tags)
    path = _sparse_tiff(layout_, tmp_path / "t.tif")
    with tifffile.TiffFile(path) as tif:
        page = tif.pages[0]
        assert tif.is_bigtiff == layout_.bigtiff and page.shape == shape
        assert page.tags[42113].value == "-32767"
        assert page.tags[33550].value == (0.25, 0.5, 0.0)
        assert page.tags[282].value == (40, 13) and page.tags[296].value == 1
        assert page.tags[42112].value == "<GDALMetadata>\n</GDALMetadata>"
        assert tuple(page.tags[50838].value) == (4, 6)
        assert all(t.valueoffset % 2 == 0 for t in page.tags.values() if t.count * 8 > 8)
        assert page.dataoffsets[0] == layout_.data_offset
        if shape == (5, 7):
            assert page.asarray().shape == shape


def test_tiff_not_offered_for_strings_structs_datetimes_or_empty():
    for dtype in ["S3", "<U2", "<M8[s]", [("a", "<i4")]]:
        assert not supports_tiff(np.dtype(dtype), (4, 4))
    assert not supports_tiff(np.dtype("u1"), (0, 4))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=0, max_size=4), st.data())
def test_flat_boxes_cover_exactly_the_range(shape, data):
    shape = tuple(shape)
    size = int(np.prod(shape))
    start = data.draw(st.integers(0, size))
    stop = data.draw(st.integers(start, size))
    marks = np.zeros(shape, np.int32)
    boxes = [box for _, box in engine.flat_boxes(start, stop, shape)]
    for box in boxes:
        marks[box] += 1
    expected = np.zeros(size, np.int32)
    expected[start:stop] = 1
    np.testing.assert_array_equal(marks.reshape(-1), expected)
    assert len(boxes) <= max(1, 2 * len(shape) - 1)


def test_options_parse_and_drop_system_options():
    options = parse_mount_options(
        [
            "ro,noauto,_netdev,nofail,user,x-systemd.automount",
            "ttl=30,png,cache_size=512M,so.region_name=eu,anon",
        ]
    )
    assert options == MountOptions(
        ttl=30.0, png=True, cache_size=512 << 20, anon=True, storage=(("region_name", "eu"),)
    )
    assert options.attr_timeout == 30.0 and not options.keep_page_cache
    assert MountOptions().keep_page_cache
    with pytest.raises(ValueError, match="unknown mount option 'bogus'"):
        parse_mount_options(["bogus"])
    with pytest.raises(ValueError):
        parse_mount_options(["ttl=-1"])
    assert parse_size("2G") == 2 << 30 and parse_size("1048576") == 1 << 20
    assert [parse_mount_options([f"push_pages={v}"]).push_pages for v in ("yes", "no", "")] == [
        True,
        False,
        True,
    ]
    assert MountOptions().push_pages
    for item in ("so.foo", "so.", "so.=1"):
        with pytest.raises(ValueError, match="needs a key and a value"):
            parse_mount_options([item])
    from zarrfs.fuse.options import option_names  # what --help lists: every field but one

    fields = {f.name for f in dataclasses.fields(MountOptions)} - {"storage"}
    assert set(option_names()) == fields | {"so.KEY=VALUE"}


def test_threads_single_for_local_stores_pool_for_network_stores():
    auto = MountOptions()
    assert fuse_mount_kwargs(auto, "/data/x.zarr")["nothreads"] is True
    assert fuse_mount_kwargs(auto, "file:///data/x.zarr")["nothreads"] is True
    for url in ("https://host/x.zarr", "s3://bucket/x.zarr", "zip::/data/x.zip"):
        assert "nothreads" not in fuse_mount_kwargs(auto, url)
    multi = parse_mount_options(["threads=multi"])
    assert "nothreads" not in fuse_mount_kwargs(multi, "/data/x.zarr")
    single = parse_mount_options(["threads=SINGLE"])
    assert fuse_mount_kwargs(single, "https://host/x.zarr")["nothreads"] is True
    with pytest.raises(ValueError, match="threads must be"):
        parse_mount_options(["threads=4"])


def test_names():
    assert layout.unique_name("attrs.json", {"attrs.json", "_attrs.json"}) == "__attrs.json"
    assert layout.axis_labels(4, ("t", None, "z/1", ""), ["T", "c", "Z", "y"]) == [
        "t",
        "c",
        "z_1",
        "y",
    ]
    assert layout.axis_labels(3, None, None) == ["dim0", "dim1", "dim2"]
    assert layout.plane_entry_name("z", 7, 120) == "z_007"
    assert layout.parse_plane_entry("z_007", "z", 120) == 7
    assert layout.parse_plane_entry("z_7", "z", 120) is None
    assert layout.parse_plane_entry("z_120", "z", 120) is None
    # only ASCII digits name a plane: int() would take these, isdigit() the first two
    for name in ("z_\u00b2", "z_\u0661", "z_\uff11", "z_+1", "z_ 1"):
        assert layout.parse_plane_entry(name, "z", 3) is None, name


class FakeArray:
    """Just enough of ``zarrfs.engine.Array`` for the tree: data in memory, reads counted."""

    kind = "array"
    zarr_format = 3
    attrs = {"units": "m"}
    implicit = False
    chunks = (1, 2, 2)

    def __init__(self, data, path="", dimension_names=None):
        self.data = data
        self.path = path
        self.name = path.rsplit("/", 1)[-1]
        self.shape = data.shape
        self.dtype = data.dtype
        self.size = data.size
        self.ndim = data.ndim
        self.data_type = str(data.dtype)
        self.dimension_names = dimension_names
        self.stored_metadata = {"zarr.json": {"shape": list(data.shape)}}
        self.flat_reads = []

    def read_flat(self, start, stop):
        self.flat_reads.append((start, stop))
        return self.data.reshape(-1)[start:stop]

    def read(self, selection=...):
        return self.data[selection]


class FakeGroup:
    kind = "group"
    zarr_format = 3
    attrs = {"name": "root"}
    implicit = False
    path = ""
    name = ""
    stored_metadata = {"zarr.json": {"node_type": "group"}}

    def __init__(self, members):
        self._members = members

    def keys(self):
        return sorted(self._members)

    def __getitem__(self, name):
        return self._members[name]


def test_tree_over_fakes_sizes_reads_and_collisions():
    cube = FakeArray(np.arange(2 * 3 * 4, dtype=np.int16).reshape(2, 3, 4), "cube", ("z", "y", "x"))
    clash = FakeArray(np.arange(3, dtype="<f8"), "attrs.json")
    tree = VirtualTree(
        lambda: FakeGroup({"cube": cube, "attrs.json": clash}),
        MountOptions(),
        control=lambda tree: {},
    )
    root = tree.resolve("/")
    assert root.names() == ["attrs.json", "cube", "_attrs.json", "meta.json", "info.txt", ".zarrfs"]
    assert is_directory(tree.resolve("/attrs.json"))  # the child node keeps its name
    data_npy = tree.resolve("/cube/data.npy")
    assert cube.flat_reads == []  # sizes never decode
    header = npy_header(np.dtype("<i2"), (2, 3, 4))
    assert data_npy.size == len(header) + 48
    handle = data_npy.open()
    assert handle.read(len(header) + 10, 6) == cube.data.tobytes()[10:16]
    assert cube.flat_reads == [(5, 8)]  # only the elements under the bytes
    plane = tree.resolve("/cube/planes/z_1.npy").open()
    content = plane.read(0, 10_000)
    np.testing.assert_array_equal(np.load(io.BytesIO(content)), cube.data[1])
    assert tree.resolve("/cube/planes").names() == ["z_0.npy", "z_0.tif", "z_1.npy", "z_1.tif"]
    for missing in ("/cube/planes/z_2.npy", "/cube/data.tif", "/nothing", "/cube/.zarray"):
        with pytest.raises(FileNotFoundError):
            tree.resolve(missing)
    with pytest.raises(NotADirectoryError):
        tree.resolve("/cube/data.npy/x")


def test_variable_length_arrays_offer_json_only():
    words = FakeArray(np.array([["a", "bé"], ["", "ccc"]], dtype=object), "words")
    tree = VirtualTree(lambda: words, MountOptions())
    assert "data.npy" not in tree.resolve("/").names()
    file = tree.resolve("/data.json")
    assert file.direct_io and file.size == 0  # unknown until generated
    content = file.open().read(0, 1000)
    assert file.size == len(content)
    import json

    assert json.loads(content) == [["a", "bé"], ["", "ccc"]]


def test_errno_table():
    assert errno_for(engine.NodeNotFoundError("x", path="a")) == errno.ENOENT
    assert errno_for(engine.ChunkDecodeError("x", path="a", key="c/0")) == errno.EIO
    assert errno_for(engine.StoreError("x")) == errno.EIO
    assert errno_for(ReadOnlyError()) == errno.EROFS
    assert errno_for(ValueError("anything")) == errno.EIO  # never EINVAL
    assert errno_for(OSError(errno.EINVAL, "x")) == errno.EIO


def test_formats():
    png = formats.preview_png(np.array([[0, 50], [100, np.nan]], dtype=np.float32))
    image = np.asarray(Image.open(io.BytesIO(png)))
    assert image.dtype == np.uint8 and image.shape == (2, 2)
    assert image[0, 0] == 0 and image[1, 0] == 255 and image[1, 1] == 0
    # as ``zarrfs get`` writes CSV: floats in full precision, text always quoted
    assert (
        formats.csv_bytes(np.array([[1.5, 2.0], [3.0, 0.1]])) == b"1.5,2\n3,0.10000000000000001\n"
    )
    assert formats.csv_bytes(np.array(["a\rb", "c"], dtype=object)) == b'"a\rb"\n"c"\n'
    # integers keep every level (not rounded through float64); constant planes are black
    ramp = np.arange(2**62, 2**62 + 4, dtype=np.int64).reshape(2, 2)
    for values, want in (
        (ramp, [[0, 85], [170, 255]]),
        (np.array([[-(2**63), 2**63 - 1]]), [[0, 255]]),
        (np.array([[0, 2**64 - 1]], dtype=np.uint64), [[0, 255]]),
        (np.full((2, 2), 7, np.int16), [[0, 0], [0, 0]]),
        (np.array([[-1.7e308, 1.7e308, np.inf, -np.inf]]), [[0, 255, 255, 0]]),
        (np.array([[1e308, 1e308, np.nan, np.inf]]), [[0, 0, 0, 255]]),
        (np.array([[np.nan, -np.inf, np.inf]]), [[0, 0, 255]]),
    ):
        image = np.asarray(Image.open(io.BytesIO(formats.preview_png(values))))
        np.testing.assert_array_equal(image, want)
    assert formats.json_bytes(np.array([b"\x00a"], dtype=object)).strip() == b'[\n "AGE="\n]'


def test_importing_the_package_loads_no_fuse():
    code = (
        "import sys, zarrfs.fuse, zarrfs.fuse.cli, zarrfs.fuse.tree; "
        "print('mfusepy' in sys.modules or 'fuse' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
