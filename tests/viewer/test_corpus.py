"""Every array of the conformance corpus through the window: what is drawn equals the expected
values the independent writer recorded (images plane 0, lines, scalars, string tables)."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from tests.conftest import find_corpus_dir
from zarrfs.viewer import transforms


def _entries_by_store():
    manifest = find_corpus_dir() / "manifest.json"
    if not manifest.is_file():
        return {}
    by_store = defaultdict(list)
    for entry in json.loads(manifest.read_text())["entries"]:
        if entry["kind"] == "array" and "nonconformant" not in entry.get("features", []):
            by_store[entry["store"]].append(entry)
    return dict(sorted(by_store.items()))


BY_STORE = _entries_by_store()


def expected_values(corpus_dir, entry):
    spec = entry["expected"]
    path = corpus_dir / spec["file"]
    if spec["format"] == "npy":
        return np.load(path, allow_pickle=False)
    doc = json.loads(path.read_text())
    data = doc["data"]
    if spec["format"] == "json-bytes":
        import base64

        data = _map_nested(data, base64.b64decode)
    out = np.empty(tuple(doc["shape"]), dtype=object)
    out[...] = data if out.ndim else data
    return out


def _map_nested(obj, fn):
    return [_map_nested(o, fn) for o in obj] if isinstance(obj, list) else fn(obj)


def check_image(window, expected):
    view = window.image
    request = view.controller.request
    assert request is not None
    if request.level != 0:
        return  # a coarser pyramid level: compared by the OME test
    state = view.state
    g, s = request.geometry, int(request.geometry.sy)
    if view.controller.composite:  # OME channels: every channel's stored values, blended
        axis = view.controller.channels.axis  # (the blend itself: test_composite.py)
        index = tuple(slice(None) if a == axis else state.indices[a] for a in range(state.ndim - 2))
        planes = expected[index][..., g.y0 : g.y0 + g.ny * s : s, g.x0 : g.x0 + g.nx * s : s]
        np.testing.assert_array_equal(view.controller.raw, planes)
        assert view.composite_item.image.shape == planes.shape[1:] + (3,)
        return
    plane = expected[(0,) * (expected.ndim - 2)]
    plane = plane[g.y0 : g.y0 + g.ny * s : s, g.x0 : g.x0 + g.nx * s : s]
    if view.controller.cf is not None:  # CF attributes (valid_range, scale_factor): decoded
        shown = view.controller.cf.to_display(plane)  # (decoding is checked against xarray's
    else:  # in tests/engine/test_cf.py)
        shown = transforms.to_display(
            plane, field_name=state.field_name, complex_mode=state.complex_mode
        )
    np.testing.assert_array_equal(view.image_item.image, shown)


def check_entry(window, idle, corpus_dir, entry):
    expected = expected_values(corpus_dir, entry)
    window.select_path(entry["path"])
    idle(window)
    widget = window.stack.currentWidget()
    if expected.size == 0:
        assert widget is window.placeholder and "is empty" in window.placeholder.text()
    elif expected.ndim == 0:
        assert widget is window.scalar
        assert window.scalar.value_label.text() == transforms.format_value(expected[()])
    elif widget is window.image:
        check_image(window, expected)
    elif widget is window.line:
        shown = transforms.to_display(
            expected,
            field_name=window.line.field.currentText() or None,
            complex_mode=window.line.mode.currentText(),
        )
        np.testing.assert_array_equal(window.line.data, shown)
    elif widget is window.table:
        model = window.table.model
        if expected.size and expected.dtype.names is None and model.columnCount():
            model.data(model.index(0, 0))
            idle(window)
            first = (
                expected.reshape(-1)[0]
                if expected.ndim == 1
                else expected[(0,) * (expected.ndim - 2) + (0, 0)]
            )
            assert model.data(model.index(0, 0)) == transforms.format_value(first)
    else:
        raise AssertionError(f"{entry['id']}: nothing shown ({window.message_bar.messages()})")


@pytest.mark.slow
@pytest.mark.parametrize("store", list(BY_STORE), ids=lambda s: s.split("corpus/", 1)[-1])
def test_corpus_store(window, idle, corpus_dir, store):
    window.open_store(str(corpus_dir / store), {})
    idle(window)
    failures = []
    for entry in BY_STORE[store]:
        try:
            check_entry(window, idle, corpus_dir, entry)
        except AssertionError as exc:
            failures.append(f"{entry['id']}: {str(exc)[:300]}")
    assert not failures, "\n".join(failures)
