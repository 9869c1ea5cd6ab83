"""The viewer's version picker over an Icechunk repository (written by Icechunk at test time):
branches, tags and history listed; switching version keeps the node and plane; the chunks that
changed between two versions outlined over the image."""

from __future__ import annotations

import numpy as np
import pytest

from tests.icechunk_repos import write_history


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return write_history(tmp_path_factory.mktemp("icechunk_viewer") / "repo")


def test_picker_lists_versions_and_switching_keeps_node_and_plane(window, idle, history):
    window.open_store(str(history.path), {}, path="stack", indices=[2, 0, 0])
    idle(window)
    picker = window.versions
    assert picker.isVisible()
    labels = [picker.version.itemText(i) for i in range(picker.version.count())]
    assert labels[:3] == ["branch experiment", "branch main", "tag v1"]
    assert len(labels) == 3 + len(history.order) + 1  # and every snapshot, the first too
    assert any("warm the corner" in label for label in labels)
    assert picker.version.currentText() == "branch main"
    main = history.values[history.branches["main"]]["stack"]
    np.testing.assert_array_equal(window.image.image_item.image, main[2])

    first = history.order[0]
    row = next(
        i
        for i, e in enumerate(picker.entries)
        if e.snapshot_id == first and "snapshot" in e.version
    )
    picker.version.activated.emit(row)
    idle(window)
    assert window.current_node.path == "stack"
    assert window.image.state.indices[0] == 2  # the plane kept
    np.testing.assert_array_equal(window.image.image_item.image, history.values[first]["stack"][2])
    assert window.root.url.endswith(first)
    assert window.versions.version.currentText().endswith(first[:8])


def test_changed_chunks_are_outlined(window, idle, history):
    window.open_store(str(history.path), {"tag": "v1"}, path="stack", indices=[2, 0, 0])
    idle(window)
    picker = window.versions
    first = history.order[0]
    row = next(i for i, e in enumerate(picker.entries) if e.version == {"snapshot": first})
    picker.compare.setCurrentIndex(row + 1)  # row 0 is "(nothing)"
    picker.compare.activated.emit(row + 1)
    idle(window)
    item = window.image.changed_item
    assert item.plane_changed() == {(1, 1)}  # stack[2, 3:, 4:], chunks of 3 x 4
    window.image.state.set_index(0, 1)  # another plane: nothing changed there
    assert item.plane_changed() == set()
    picker.compare.setCurrentIndex(0)
    picker.compare.activated.emit(0)
    idle(window)
    window.image.state.set_index(0, 2)
    assert item.plane_changed() == set()


def test_no_picker_for_a_plain_store(window, idle, sample_store):
    path, _ = sample_store
    window.open_store(str(path), {})
    idle(window)
    assert not window.versions.isVisible()


def test_a_missing_version_is_a_message(window, idle, history):
    window.open_store(str(history.path), {"branch": "nope"})
    idle(window)
    texts = window.message_bar.messages()
    assert any("no branch 'nope'" in t for t in texts), texts
