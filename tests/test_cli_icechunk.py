"""``zarrfs log`` and ``tree``/``info``/``get`` at any version of an Icechunk repository
(written by Icechunk at test time)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.icechunk_repos import write_history
from zarrfs.cli import main


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return write_history(tmp_path_factory.mktemp("icechunk_cli") / "repo")


def test_log_lists_every_snapshot_with_refs_and_messages(history, capsys):
    assert main(["log", str(history.path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(history.order) + 1  # and the repository's first snapshot
    by_id = {line.split()[0]: line for line in lines}
    for sid, message in history.messages.items():
        assert by_id[sid].endswith(f"  {message}")
    assert "(branch main)" in by_id[history.branches["main"]]
    assert "(branch experiment)" in by_id[history.branches["experiment"]]
    assert "(tag v1)" in by_id[history.tags["v1"]]
    assert " UTC " in by_id[history.order[0]]


def test_log_of_one_branch_as_json(history, capsys):
    assert main(["log", str(history.path), "--branch", "experiment", "--json", "-n", "2"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == [history.branches["experiment"], history.tags["v1"]]
    assert rows[0]["message"] == "add extra"
    assert rows[0]["parent_id"] == history.tags["v1"]
    assert rows[1]["refs"] == ["tag v1"]


def test_tree_and_info_at_a_version(history, capsys):
    assert main(["tree", str(history.path), "--branch", "experiment"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{history.path}@{history.branches['experiment']}"
    assert "extra  5 uint8" in out
    assert main(["tree", str(history.path), "--tag", "v1"]) == 0
    assert "extra" not in capsys.readouterr().out
    assert main(["info", f"{history.path}/g/temp", "--snapshot", history.order[0]]) == 0
    assert "6 x 8" in capsys.readouterr().out


def test_get_at_each_version(history, tmp_path):
    for sid in history.order:
        out = tmp_path / f"{sid}.npy"
        assert (
            main(["get", f"{history.path}/g/temp", "[1:5, :]", "-o", str(out), "--snapshot", sid])
            == 0
        )
        np.testing.assert_array_equal(np.load(out), history.values[sid]["g/temp"][1:5, :])


def test_a_missing_version_is_one_line(history, capsys):
    assert main(["tree", str(history.path), "--branch", "nope"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("zarrfs: error: no branch 'nope'")
    assert err.count("\n") == 1
