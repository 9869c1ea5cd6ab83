"""What the viewer says: values as Python users write them, errors naming what failed, the
command line's errors on stderr."""

from __future__ import annotations

import numpy as np

from tests.viewer.test_cli import run_view
from zarrfs.viewer import transforms


def test_fixed_length_bytes_and_strings_format_plainly():
    assert transforms.format_value(np.bytes_(b"ab")) == "b'ab'"
    assert transforms.format_value(np.array([b"xy"], "S2")[0]) == "b'xy'"
    assert transforms.format_value(np.str_("µm")) == "µm"
    record = np.array([(1, b"xy")], dtype=[("a", "i4"), ("s", "S2")])[0]
    assert transforms.format_value(record) == "(a=1, s=b'xy')"


def test_unopenable_url_is_named_as_given(window, idle, http_server):
    url = http_server({}).url + "/nothing.zarr"
    window.open_store(url, {})
    idle(window)
    messages = window.message_bar.messages()
    assert len(messages) == 1
    assert f"'{url}'" in messages[0] and "'/http" not in messages[0]


def test_command_line_errors_go_to_stderr(tmp_path):
    result = run_view(tmp_path / "none.zarr", "-O", "bad", tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "zarrfs view: -O expects key=value, got 'bad'" in result.stderr
    result = run_view(tmp_path / "none.zarr", "--cache-size", "lots", tmp_path)
    assert result.returncode == 2
    assert "argument --cache-size: not a size: 'lots'" in result.stderr
    assert "parse_bytes" not in result.stderr
