"""``zarrfs view --screenshot`` of a store whose consolidated metadata names children that
cannot be a file name (``..`` among them) shows the rest and exits 0."""

from __future__ import annotations

from tests.hostile import write_bad_names
from tests.viewer.test_cli import run_view


def test_screenshot_of_a_store_with_unusable_names(tmp_path):
    root = write_bad_names(tmp_path / "s.zarr")
    out = tmp_path / "o.png"
    result = run_view(root, "--screenshot", out, "--timeout", "30", tmp_path)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 1000
