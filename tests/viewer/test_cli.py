"""``zarrfs view ... --screenshot``: renders once loading is done, headless, then exits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import zarr

REPO = Path(__file__).resolve().parents[2]


def run_view(*args, timeout=120):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(args[-1]))
    return subprocess.run(
        [sys.executable, "-m", "zarrfs.viewer.cli", "view", *map(str, args[:-1])],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_screenshot_of_a_plane(tmp_path):
    from PIL import Image

    arr = zarr.create_array(
        tmp_path / "s.zarr", shape=(20, 64, 80), chunks=(1, 32, 32), dtype="uint8"
    )
    data = np.zeros((20, 64, 80), np.uint8)
    data[12, :, 40:] = 255  # only plane 12 has a bright right half
    arr[:] = data
    out = tmp_path / "shot.png"
    result = run_view(
        tmp_path / "s.zarr", "--index", "12", "--screenshot", out, "--size", "900x600", tmp_path
    )
    assert result.returncode == 0, result.stderr
    image = np.asarray(Image.open(out).convert("L"))
    assert image.shape == (600, 900)
    assert (image > 250).sum() > 5000  # the bright half of plane 12 is on screen


def test_screenshot_of_a_node_and_exit_code_on_error(tmp_path):
    root = zarr.open_group(tmp_path / "g.zarr", mode="w")
    root.create_array("a/b", shape=(10, 10), dtype="f4")[:] = 1
    ok = run_view(
        tmp_path / "g.zarr", "--node", "/a/b", "--screenshot", tmp_path / "ok.png", tmp_path
    )
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "ok.png").stat().st_size > 1000
    bad = run_view(tmp_path / "missing.zarr", "--screenshot", tmp_path / "bad.png", tmp_path)
    assert bad.returncode == 4 and "Not found" in bad.stderr


def test_view_subcommand_in_zarrfs_cli():
    from zarrfs.cli import build_parser
    from zarrfs.storage_options import from_args

    parser = build_parser()
    args = parser.parse_args(
        [
            "view",
            "s3://b/x.zarr",
            "--anon",
            "--endpoint-url",
            "http://h:9",
            "-O",
            "use_ssl=false",
            "--index",
            "12,0",
            "--node",
            "/g/a",
            "--cache-size",
            "2G",
        ]
    )
    assert args.index == [12, 0] and args.node == "/g/a" and callable(args.func)
    assert args.cache_size == 2 * 2**30
    options = from_args(args)
    assert options["anon"] is True and options["use_ssl"] is False
    assert (
        options.get("client_kwargs", {}).get("endpoint_url", options.get("endpoint_url"))
        == "http://h:9"
    )


def test_view_subcommand_standalone():
    import argparse

    from zarrfs.viewer.cli import add_parser

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(["view", "--screenshot", "x.png", "--size", "800x600"])
    assert args.url is None and args.size == (800, 600) and args.screenshot == "x.png"


def test_index_that_does_not_fit_is_an_error(tmp_path):
    arr = zarr.create_array(
        tmp_path / "v.zarr",
        shape=(5, 40, 50),
        chunks=(1, 20, 25),
        dtype="u2",
        dimension_names=["z", "y", "x"],
    )
    arr[:] = 1
    out = tmp_path / "o.png"
    for index, expected in [
        ("99", "--index 99 is outside axis 'z' of size 5"),
        ("-6", "--index -6 is outside axis 'z' of size 5"),
        ("1,2,3,4", "--index has 4 values"),
    ]:
        result = run_view(tmp_path / "v.zarr", f"--index={index}", "--screenshot", out, tmp_path)
        assert result.returncode == 4, (index, result.stderr)
        assert expected in result.stderr, (index, result.stderr)
    result = run_view(tmp_path / "v.zarr", "--index=-1", "--screenshot", out, tmp_path)
    assert result.returncode == 0, result.stderr


def test_screenshot_renders_the_composite(tmp_path):
    """An OME-Zarr image of a red and a green channel, each bright in one half: the
    screenshot shows both colours (and yellow nowhere: the halves do not overlap)."""
    from PIL import Image

    root = zarr.open_group(tmp_path / "img.zarr", mode="w", zarr_format=2)
    data = np.zeros((2, 64, 80), np.uint8)
    data[0, :, :40] = 200
    data[1, :, 40:] = 200
    root.create_array("0", data=data, chunks=(1, 32, 32))
    root.attrs.update(
        {
            "multiscales": [
                {
                    "version": "0.4",
                    "axes": [{"name": "c", "type": "channel"}, {"name": "y"}, {"name": "x"}],
                    "datasets": [{"path": "0"}],
                }
            ],
            "omero": {
                "channels": [
                    {"label": "red", "color": "FF0000", "window": {"start": 0, "end": 200}},
                    {"label": "green", "color": "00FF00", "window": {"start": 0, "end": 200}},
                ]
            },
        }
    )
    out = tmp_path / "shot.png"
    result = run_view(tmp_path / "img.zarr", "--screenshot", out, "--size", "900x600", tmp_path)
    assert result.returncode == 0, result.stderr
    rgb = np.asarray(Image.open(out).convert("RGB")).astype(int)
    red = (rgb[..., 0] == 255) & (rgb[..., 1] == 0) & (rgb[..., 2] == 0)
    green = (rgb[..., 0] == 0) & (rgb[..., 1] == 255) & (rgb[..., 2] == 0)
    assert red.sum() > 5000 and green.sum() > 5000
    assert ((rgb[..., 0] > 200) & (rgb[..., 1] > 200) & (rgb[..., 2] < 50)).sum() == 0
