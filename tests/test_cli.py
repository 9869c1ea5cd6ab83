"""The command line, in-process and as a subprocess, against zarr-python-written stores and the
bundled demo store: real values in the output, one-line errors with exit status 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tifffile

from zarrfs.cli import UsageError, main, parse_selection

DEMO = Path(__file__).resolve().parents[1] / "resources" / "demo.zarr"


@pytest.fixture
def store(zarr_writer):
    data = np.arange(4 * 30 * 40, dtype="u2").reshape(4, 30, 40)
    w = zarr_writer(
        data,
        path="g/vol",
        chunks=(1, 16, 16),
        shards=(2, 16, 32),
        attributes={"units": "counts"},
        dimension_names=("z", "y", "x"),
    )
    zarr_writer(np.linspace(0, 1, 7), path="line", root=w.root)
    return w.root, data


def test_info_text_and_json(store, capsys):
    root, data = store
    assert main(["info", str(root / "g" / "vol")]) == 0
    text = capsys.readouterr().out
    assert "4 x 30 x 40" in text and "uint16" in text and "1 x 16 x 16" in text
    assert "2 x 16 x 32" in text and "sharding_indexed" in text and "z, y, x" in text
    assert '"units": "counts"' in text
    assert main(["info", str(root / "g" / "vol"), "--json", "--stored-size"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["shape"] == [4, 30, 40] and s["chunks"] == [1, 16, 16] and s["shards"] == [2, 16, 32]
    assert s["nbytes"] == data.nbytes and s["stored_bytes"] > 0
    assert s["attributes"] == {"units": "counts"} and s["dimension_names"] == ["z", "y", "x"]
    assert [c["name"] for c in s["codecs"]] == ["sharding_indexed"]


def test_tree(store, capsys):
    root, _ = store
    assert main(["tree", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == ["├── g/", "│   └── vol  4 x 30 x 40 uint16", "└── line  7 float64"]


@pytest.mark.parametrize("suffix", [".npy", ".tif", ".csv"])
def test_get_matches_writer(store, tmp_path, suffix):
    root, data = store
    out = tmp_path / f"sel{suffix}"
    sel = "[2, 3:25, ::-3]"
    assert main(["get", str(root / "g" / "vol"), sel, "-o", str(out)]) == 0
    expected = data[2, 3:25, ::-3]
    got = {
        ".npy": np.load,
        ".tif": tifffile.imread,
        ".csv": lambda p: np.loadtxt(p, delimiter=",", dtype="u2"),
    }[suffix](out)
    np.testing.assert_array_equal(got, expected)


def test_get_in_slabs(store, tmp_path, monkeypatch):
    import zarrfs.cli_get as cli_get

    monkeypatch.setattr(cli_get, "_SLAB_BYTES", 2400)  # one row of 30x40 uint16 per slab
    root, data = store
    out = tmp_path / "all.npy"
    assert (
        main(["get", str(root / "g" / "vol"), "[::-1, 5:, ...]", "-o", str(out), "--progress"]) == 0
    )
    np.testing.assert_array_equal(np.load(out), data[::-1, 5:, ...])


def test_errors_are_one_line(store, tmp_path, capsys):
    root, _ = store
    assert main(["info", str(tmp_path / "missing.zarr")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("zarrfs: error: no Zarr group or array")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / ".zarray").write_text(
        json.dumps(
            {
                "zarr_format": 2,
                "shape": [2],
                "chunks": [2],
                "dtype": "<i4",
                "fill_value": 0,
                "order": "C",
                "filters": None,
                "compressor": {"id": "secretzip"},
            }
        )
    )
    assert main(["info", str(tmp_path / "bad")]) == 1
    assert "secretzip" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["get", str(root / "g" / "vol"), "[1, ", "-o", str(tmp_path / "x.npy")])
    assert exit_.value.code == 2
    assert main(["get", str(root / "g" / "vol"), "[99]", "-o", str(tmp_path / "x.npy")]) == 1
    err = capsys.readouterr().err
    assert "out of bounds" in err and f"{root / 'g' / 'vol'}: selection [99]: " in err
    assert main(["get", str(root / "g" / "vol"), "[...]", "-o", str(tmp_path / "x.csv")]) == 1
    assert "CSV" in capsys.readouterr().err


def test_selection_parser_never_evaluates():
    assert parse_selection("[0, :, 100:200]") == (0, slice(None), slice(100, 200))
    assert parse_selection("[..., ::-2]") == (Ellipsis, slice(None, None, -2))
    assert parse_selection("[()]") == ()
    assert parse_selection("0") == (0,) and parse_selection("[-1, 2:-1:3]") == (-1, slice(2, -1, 3))
    for bad in ["[__import__('os').system('x')]", "[1.5]", "[a]"]:
        with pytest.raises(UsageError):
            parse_selection(bad)


def test_storage_options_flags():
    import argparse

    from zarrfs.storage_options import from_args as storage_options_from_args

    args = argparse.Namespace(
        anon=True,
        endpoint_url="http://127.0.0.1:9000",
        storage_option=[
            "client_kwargs.region_name=eu-west-1",
            "default_block_size=1024",
            "profile=dev",
        ],
    )
    assert storage_options_from_args(args) == {
        "anon": True,
        "default_block_size": 1024,
        "profile": "dev",
        "endpoint_url": "http://127.0.0.1:9000",
        "client_kwargs": {"region_name": "eu-west-1"},
    }


def test_subprocess_on_demo_store():
    proc = subprocess.run(
        [sys.executable, "-m", "zarrfs.cli", "tree", str(DEMO)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "phantom  64 x 256 x 256 uint16" in proc.stdout
    assert "cells/" in proc.stdout and "records  100" in proc.stdout


def test_a_reader_that_stops_early_is_no_error():
    """``zarrfs tree URL | head -1``: the pipe closes before the output is written; the
    command stops quietly (128 + SIGPIPE, as a program killed by it), with no message."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "zarrfs.cli", "tree", str(DEMO)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # long before the command has started up and written
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (141, b"")


def test_s3_info_via_cli(s3_store, store, capsys):
    root, data = store
    url, options = s3_store(root)
    args = [
        "info",
        url + "/g/vol",
        "--json",
        "-O",
        f"key={options['key']}",
        "-O",
        f"secret={options['secret']}",
        "-O",
        f"client_kwargs.region_name={options['client_kwargs']['region_name']}",
        "--endpoint-url",
        options["endpoint_url"],
    ]
    assert main(args) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["shape"] == list(data.shape)


def test_tree_and_info_show_a_broken_child(store, capsys):
    root, _ = store
    (root / "broken").mkdir()
    (root / "broken" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "array"}')
    assert main(["tree", str(root)]) == 0
    out = capsys.readouterr().out
    assert "broken  (error:" in out and "'shape' is missing" in out and "line  7 float64" in out
    assert main(["info", str(root)]) == 0
    assert "broken  (error:" in capsys.readouterr().out


@pytest.mark.parametrize("consolidated", [False, True], ids=["listed", "consolidated"])
def test_tree_lists_every_node_and_marks_the_broken_ones(tmp_path, capsys, consolidated):
    from tests.engine.test_contained import broken_store

    root = tmp_path / "store.zarr"
    broken_store(root, 2, consolidated)
    assert main(["tree", str(root)]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert [line.split()[1] for line in lines] == ["codec", "dtype", "good", "malformed"]
    codec, dtype, good, malformed = lines
    assert "3 x 4 int32  (error:" in codec and "unknown codec 'fancyzip'" in codec
    assert "(error:" in dtype and "q9" in dtype and "(error:" in malformed
    assert good.endswith("good  3 x 4 int32")


def test_info_on_a_broken_node_fails_with_its_reason(tmp_path, capsys):
    from tests.engine.test_contained import broken_store

    root = tmp_path / "store.zarr"
    broken_store(root, 3, consolidated=False)
    assert main(["info", str(root / "dtype")]) == 1  # the node named cannot be read: why
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("zarrfs: error: ") and "int3" in err
    assert str(root / "dtype" / "zarr.json") in err
    assert main(["info", str(root / "codec")]) == 1
    out, err = capsys.readouterr()
    assert "3 x 4" in out and "mystery" in out and "unknown codec 'mystery'" in err
    assert main(["info", str(root), "--json"]) == 0
    members = {m["name"]: m for m in json.loads(capsys.readouterr().out)["members"]}
    assert members["dtype"]["kind"] == "broken" and "int3" in members["dtype"]["error"]
    assert "mystery" in members["codec"]["error"] and "error" not in members["good"]


DEMO_TREE = """\
├── images/
│   └── cells/
│       ├── 0  2 x 512 x 512 uint8
│       ├── 1  2 x 256 x 256 uint8
│       ├── 2  2 x 128 x 128 uint8
│       └── 3  2 x 64 x 64 uint8
├── tables/
│   ├── answer  () int64
│   ├── names  16 string
│   ├── profile  1000 float64
│   └── records  100 [('id', '<i4'), ('x', '<f4'), ('y', '<f4'), ('area', '<f8')]
└── volumes/
    └── phantom  64 x 256 x 256 uint16
"""


def test_tree_of_demo_and_depth(capsys):
    assert main(["tree", str(DEMO)]) == 0
    out = capsys.readouterr().out
    assert out == f"{DEMO}\n{DEMO_TREE}"
    assert main(["tree", str(DEMO), "--depth", "1"]) == 0
    assert capsys.readouterr().out == f"{DEMO}\n├── images/\n├── tables/\n└── volumes/\n"
    assert main(["tree", str(DEMO / "tables" / "profile")]) == 0
    assert capsys.readouterr().out == f"{DEMO / 'tables' / 'profile'}  1000 float64\n"


def test_demo_v2_tree_info_get(tmp_path, capsys):
    import zarr

    v2 = DEMO.parent / "demo_v2.zarr"
    assert main(["tree", str(v2)]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "├── counts  100 x 120 int32",
        "└── nested/",
        "    └── ramp  500 float32",
    ]
    assert main(["info", str(v2 / "counts"), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["zarr_format"] == 2 and s["fill_value"] == -1 and s["chunks"] == [32, 40]
    assert s["codecs"][-1]["name"] == "blosc" and s["attributes"] == {
        "description": "row * 1000 + column"
    }
    out = tmp_path / "counts.csv"
    assert main(["get", str(v2 / "counts"), "[10:90:7, -5:]", "-o", str(out)]) == 0
    expected = zarr.open_array(str(v2 / "counts"), mode="r")[10:90:7, -5:]
    np.testing.assert_array_equal(np.loadtxt(out, delimiter=",", dtype="i4"), expected)


def test_get_demo_stack_to_tiff_and_strings(tmp_path, capsys):
    import zarr

    out = tmp_path / "stack.tiff"
    assert (
        main(["get", str(DEMO / "volumes" / "phantom"), "[30:34, 100:180, ::2]", "-o", str(out)])
        == 0
    )
    expected = zarr.open_array(str(DEMO / "volumes" / "phantom"), mode="r")[30:34, 100:180, ::2]
    got = tifffile.imread(out)
    assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, expected)
    out = tmp_path / "names.npy"
    assert main(["get", str(DEMO / "tables" / "names"), "[::-1]", "-o", str(out)]) == 0
    names = zarr.open_array(str(DEMO / "tables" / "names"), mode="r")[...][::-1]
    assert np.load(out).tolist() == [str(v) for v in names]
    assert "names.npy (16 <U7)" in capsys.readouterr().err  # what the file holds (ünïcödé: 7)
    out = tmp_path / "profile.csv"
    assert main(["get", str(DEMO / "tables" / "profile"), "[...]", "-o", str(out)]) == 0
    profile = zarr.open_array(str(DEMO / "tables" / "profile"), mode="r")[...]
    np.testing.assert_array_equal(np.loadtxt(out, delimiter=","), profile)  # %.17g round-trips


def test_info_json_of_demo_as_subprocess():
    proc = subprocess.run(
        [sys.executable, "-m", "zarrfs.cli", "info", "--json", str(DEMO / "volumes" / "phantom")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["shape"] == [64, 256, 256] and s["dtype"] == "uint16" and s["chunks"] == [16, 64, 64]
    assert s["shards"] == [32, 128, 128] and s["dimension_names"] == ["z", "y", "x"]
    (shard,) = s["codecs"]
    inner = [c["name"] for c in shard["configuration"]["codecs"]]
    assert shard["name"] == "sharding_indexed" and inner == ["bytes", "zstd"]
    assert s["attributes"]["voxel_size_um"] == 0.5


def test_errors_as_subprocess_are_one_line(tmp_path):
    cmd = [sys.executable, "-m", "zarrfs.cli"]
    proc = subprocess.run(
        [*cmd, "get", str(tmp_path / "nope.zarr"), "[0]", "-o", str(tmp_path / "x.npy")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("zarrfs: error: ")
    proc = subprocess.run(
        [*cmd, "get", str(DEMO / "tables" / "profile"), "[1:2:0]", "-o", str(tmp_path / "x.npy")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "step" in proc.stderr
    for flags in (
        ["--debug", "info", str(tmp_path / "nope.zarr")],
        ["info", str(tmp_path / "nope.zarr"), "--debug"],
    ):  # before or after
        proc = subprocess.run([*cmd, *flags], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1 and "Traceback" in proc.stderr, flags


def test_verbose_goes_before_or_after_the_command():
    from zarrfs.cli import build_parser

    for argv, verbose in (
        (["-v", "-v", "tree", "x"], 2),
        (["tree", "x", "-vv"], 2),
        (["tree", "x"], 0),
        (["mount", "x", "y", "-v"], 1),
    ):
        assert build_parser().parse_args(argv).verbose == verbose, argv
    assert build_parser().parse_args(["get", "x", "[0]", "-o", "y.npy", "--debug"]).debug


def test_usage_errors_exit_2(tmp_path, capsys):
    for argv, words in [
        (["get", str(DEMO), "[0]", "-o", str(tmp_path / "x.npy")], "is a group"),
        (
            ["get", str(DEMO / "tables" / "profile"), "[0]", "-o", str(tmp_path / "x.png")],
            "unsupported output",
        ),
        (
            ["get", str(DEMO / "tables" / "profile"), "[open('x')]", "-o", str(tmp_path / "x.npy")],
            "invalid selection",
        ),
        (["info", str(DEMO), "-O", "novalue"], "key=value"),
    ]:
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err
    assert not (tmp_path / "x.npy").exists()


def test_output_shape_errors_name_the_format(tmp_path, capsys):
    profile = str(DEMO / "tables" / "profile")
    assert main(["get", profile, "[:10]", "-o", str(tmp_path / "x.tif")]) == 1
    assert "TIFF needs a 2-D selection" in capsys.readouterr().err
    assert (
        main(["get", str(DEMO / "tables" / "records"), "[:3]", "-o", str(tmp_path / "r.csv")]) == 1
    )
    assert "CSV cannot hold structured data" in capsys.readouterr().err


def test_progress_bar_only_when_asked(store, tmp_path, monkeypatch, capsys):
    import zarrfs.cli_get as cli_get

    monkeypatch.setattr(cli_get, "_SLAB_BYTES", 2400)
    root, data = store
    vol = str(root / "g" / "vol")
    assert main(["get", vol, "[...]", "-o", str(tmp_path / "a.npy")]) == 0
    assert "reading" not in capsys.readouterr().err  # stderr is not a terminal here
    assert main(["get", vol, "[...]", "-o", str(tmp_path / "b.npy"), "--progress"]) == 0
    err = capsys.readouterr().err
    assert "reading" in err and "0/4" in err  # tqdm redraws at its own pace: no final count
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), data)


# ----------------------------------------------------------------- selections that must not pass
def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("zarrfs: error: ") and "Traceback" not in err
    return err


def test_get_on_a_0d_array_checks_the_selection(zarr_writer, tmp_path, capsys):
    """A 0-d array takes ``[...]`` and ``[()]``; any index is one too many, as for
    ``array[sel]``, instead of quietly writing the scalar."""
    scalar = str(zarr_writer(np.array(7.5), path="s").location)
    for sel, count in [("[5]", 1), ("[:, :]", 2), ("[0, ...]", 1)]:
        out = tmp_path / "bad.npy"
        assert main(["get", scalar, sel, "-o", str(out)]) == 1, sel
        assert f"too many indices ({count}) for an array of 0 dimensions" in _one_line_error(capsys)
        assert not out.exists()
    for sel in ["[...]", "[()]", "..."]:
        out = tmp_path / "ok.npy"
        assert main(["get", scalar, sel, "-o", str(out)]) == 0, sel
        got = np.load(out)
        assert got.shape == () and got.dtype == np.float64 and got[()] == 7.5
    assert main(["get", scalar, "[...]", "-o", str(tmp_path / "s.csv")]) == 0
    assert (tmp_path / "s.csv").read_text() == "7.5\n"


@pytest.mark.parametrize(
    "text, words",
    [
        ("[5][0:2]", "one [...] only"),
        ("[1:2][0]", "one [...] only"),
        ("[0][1]", "one [...] only"),
        ("0][1", "one [...] only"),
        ("[0, ..., ...]", "'...' may appear only once"),
        ("[..., 0, ...]", "'...' may appear only once"),
        ("[True]", "'True' is a boolean"),
        ("[0, False]", "'False' is a boolean"),
        ("[1:True]", "'True' is a boolean"),
        ("[-True]", "is a boolean"),
        ("[--1]", "is not an integer"),
        ("[None]", "is not an integer"),
        ("[(0, 1), 2]", "is not an integer"),
        ("[0], [1]", "not a single [...] selection"),
        ("[0] # [1]", "'#'"),
    ],
)
def test_selection_parser_refuses_what_numpy_reads_otherwise(text, words):
    with pytest.raises(UsageError) as error:
        parse_selection(text)
    message = str(error.value)
    assert message.startswith(f"invalid selection {text!r}: ") and words in message, message


def test_selection_parser_reads_basic_indexing():
    assert parse_selection("[+3, -0x10, 0:-1:2, ::]") == (3, -16, slice(0, -1, 2), slice(None))
    assert parse_selection(" 0, ..., ::-1 ") == (0, Ellipsis, slice(None, None, -1))
    assert parse_selection("[1,]") == (1,) and parse_selection("...") == (Ellipsis,)


def test_chained_selection_is_a_usage_error_not_other_data(store, tmp_path, capsys):
    root, _ = store
    out = tmp_path / "x.npy"
    for sel in ["[3][0:2]", "[0][1]", "[0, ..., ...]", "[True]"]:
        with pytest.raises(SystemExit) as exit_:
            main(["get", str(root / "g" / "vol"), sel, "-o", str(out)])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "invalid selection" in err
        assert not out.exists()


# ----------------------------------------------------------------- text in .csv and .npy
def _bytes_array(root: Path, values: list[bytes], path: str = "b") -> str:
    """Variable-length bytes written by zarr-python (the writer fixture infers no dtype for
    ``object`` data)."""
    import warnings

    import zarr
    from zarr.core.dtype import VariableLengthBytes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no Zarr V3 specification" for this data type
        arr = zarr.create_array(
            str(root), name=path, shape=(len(values),), chunks=(2,), dtype=VariableLengthBytes()
        )
        arr[:] = np.array(values, dtype=object)
    return str(root / path)


def _read_csv(path: Path) -> list[list[str]]:
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


STRINGS = [["a,b", "x"], ["line1\nline2", 'q"uote'], ["cr\rhere", ""], ["ünï, ∅", "nul\x00\x00"]]


def test_csv_quotes_text_so_it_reads_back(zarr_writer, tmp_path):
    w = zarr_writer(np.array(STRINGS, dtype=np.dtypes.StringDType()), path="strcsv")
    out = tmp_path / "f.csv"
    assert main(["get", str(w.location), "[...]", "-o", str(out)]) == 0
    assert _read_csv(out) == STRINGS
    assert main(["get", str(w.location), "[::-1, 1]", "-o", str(out)]) == 0
    assert _read_csv(out) == [[row[1]] for row in STRINGS[::-1]]


def test_csv_numbers_keep_their_text(zarr_writer, tmp_path):
    w = zarr_writer(np.array([[0.1, 1 / 3], [-0.0, 1e300]]), path="f")
    zarr_writer(np.array([[-(2**63), 7]], dtype="i8"), path="i", root=w.root)
    out = tmp_path / "n.csv"
    assert main(["get", str(w.location), "[...]", "-o", str(out)]) == 0
    assert out.read_text() == (
        "0.10000000000000001,0.33333333333333331\n-0,1.0000000000000001e+300\n"
    )
    np.testing.assert_array_equal(np.loadtxt(out, delimiter=","), w.data)
    assert main(["get", str(w.root / "i"), "[0]", "-o", str(out)]) == 0
    assert out.read_text() == "-9223372036854775808\n7\n"


def test_npy_refuses_to_drop_trailing_nuls(zarr_writer, tmp_path, capsys):
    import ast

    values = [b"a\x00", b"\x00\x00", b"x", b"mid\x00dle"]
    array = _bytes_array(tmp_path / "nul.zarr", values)
    out = tmp_path / "b.npy"
    assert main(["get", array, "[...]", "-o", str(out)]) == 1
    err = _one_line_error(capsys)
    assert "value [0] of the selection ends in a NUL character" in err and ".csv" in err
    assert not out.exists()
    assert main(["get", array, "[1:]", "-o", str(out)]) == 1
    assert "value [0] of the selection ends in a NUL" in _one_line_error(capsys)
    assert main(["get", array, "[2:]", "-o", str(out)]) == 0  # no trailing NUL: as before
    got = np.load(out)
    assert got.dtype == np.dtype("S7") and got.tolist() == values[2:]
    csv_out = tmp_path / "b.csv"
    assert main(["get", array, "[...]", "-o", str(csv_out)]) == 0  # bytes as b'...': lossless
    assert [ast.literal_eval(cell) for (cell,) in _read_csv(csv_out)] == values

    capsys.readouterr()
    text = zarr_writer(np.array([["ok", "end\x00"]], dtype=np.dtypes.StringDType()), path="t")
    assert main(["get", str(text.location), "[...]", "-o", str(out)]) == 1
    err = _one_line_error(capsys)
    assert "value [0, 1] of the selection ends in a NUL" in err and "strings" in err
    assert main(["get", str(text.location), "[:, 0]", "-o", str(out)]) == 0
    assert np.load(out).tolist() == ["ok"]
    assert main(["get", str(text.location), "[...]", "-o", str(csv_out)]) == 0
    assert _read_csv(csv_out) == [["ok", "end\x00"]]


def test_new_errors_as_subprocess_are_one_line(zarr_writer, tmp_path):
    scalar = zarr_writer(np.array(3, dtype="i4"), path="s")
    nul = _bytes_array(scalar.root, [b"x\x00"])
    cmd = [sys.executable, "-m", "zarrfs.cli", "get"]
    for args, status, words in [
        ([str(scalar.location), "[5]"], 1, "too many indices"),
        ([str(scalar.location), "[0][0]"], 2, "one [...] only"),
        ([nul, "[...]"], 1, "NUL character"),
    ]:
        proc = subprocess.run(
            [*cmd, *args, "-o", str(tmp_path / "x.npy")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == status and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr


@pytest.mark.parametrize("dtype", ["c8", ">c16"])
def test_get_writes_complex_tiff_as_the_mount_offers_it(zarr_writer, tmp_path, dtype):
    values = (np.arange(12) - 1j * np.arange(12) ** 2).astype(dtype).reshape(3, 4)
    w = zarr_writer(values, path="z")
    out = tmp_path / "z.tif"
    assert main(["get", str(w.location), "[...]", "-o", str(out)]) == 0
    got = tifffile.imread(out)
    assert got.dtype == np.dtype(dtype).newbyteorder("=")
    np.testing.assert_array_equal(got, values)


def test_azure_info_and_get_via_cli(azure_store, azurite, store, tmp_path, capsys, monkeypatch):
    """Over Azurite: the account key as -O options, then the connection string alone (as the
    az CLI and Azurite give it) in the environment."""
    root, data = store
    url, options = azure_store(root)
    flags = [f"-O{key}={value}" for key, value in options.items()]
    assert main(["info", url + "/g/vol", "--json", *flags]) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["shape"] == list(data.shape)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string)
    out = tmp_path / "vol.npy"
    assert main(["get", url + "/g/vol", "[1:, ::2]", "-o", str(out)]) == 0
    np.testing.assert_array_equal(np.load(out), data[1:, ::2])


def test_an_option_obstore_cannot_honour_is_a_usage_error(s3_store, store, capsys):
    root, _ = store
    url, options = s3_store(root)
    flags = [
        "--endpoint-url",
        options["endpoint_url"],
        "-O",
        "config_kwargs.max_pool_connections=20",
    ]
    with pytest.raises(SystemExit) as exit_status:
        main(["info", url + "/g/vol", *flags])
    assert exit_status.value.code == 2
    err = capsys.readouterr().err
    assert "config_kwargs.max_pool_connections" in err and "transport=fsspec" in err
    # read through fsspec, where s3fs takes it
    assert main(["info", url + "/g/vol", *flags, "-O", "transport=fsspec"]) == 0
