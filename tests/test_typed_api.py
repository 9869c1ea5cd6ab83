"""The front ends use the engine's typed API: no feature probing of the engine, no attribute
invented when an engine node lacks it, OME-Zarr read through the engine's dataclasses only."""

from __future__ import annotations

import ast
import json
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FRONT_ENDS = [*(REPO / "viewer").glob("*.py"), *(REPO / "zarrfs" / "fuse").glob("*.py")]
FRONT_ENDS += [REPO / "zarrfs" / "cli.py", REPO / "zarrfs" / "cli_get.py"]
ENGINE_OBJECTS = {"engine", "node", "group", "array", "arr", "root", "child", "level"}


def _probes(path: Path) -> list[str]:
    """``hasattr(engine_object, ...)`` and ``getattr(engine_object, name, default)`` calls."""
    found = []
    for call in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)) or not call.args:
            continue
        subject = call.args[0]
        if not (isinstance(subject, ast.Name) and subject.id in ENGINE_OBJECTS):
            continue
        if call.func.id == "hasattr" or (call.func.id == "getattr" and len(call.args) == 3):
            found.append(f"{path.relative_to(REPO)}:{call.lineno}: {ast.unparse(call)}")
    return found


def test_front_ends_do_not_probe_the_engine():
    assert [probe for path in FRONT_ENDS for probe in _probes(path)] == []


def test_the_viewer_takes_pyramid_levels_from_the_engine_only(tmp_path):
    """Multiscales the engine rejects are no pyramid: the viewer does not read the raw
    attributes behind the engine's back."""
    import zarrfs.engine as engine
    from viewer.pyramid import dataset_paths

    def image(name: str, axes) -> engine.Group:
        root = tmp_path / name
        root.mkdir()
        multiscales = [{"version": "0.4", "axes": axes, "datasets": [{"path": "0"}, {"path": "1"}]}]
        document = {"zarr_format": 3, "node_type": "group"}
        document["attributes"] = {"multiscales": multiscales}
        (root / "zarr.json").write_text(json.dumps(document))
        return engine.open(str(root))

    assert dataset_paths(image("good", [{"name": "y"}, {"name": "x"}])) == ["0", "1"]
    assert dataset_paths(image("bad", "yx")) == []
