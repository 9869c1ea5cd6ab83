"""One of each shared utility: a single definition in the engine, used by every front end."""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SHARED = {
    "flat_boxes": "zarrfs/engine/grid.py",
    "grid_shape": "zarrfs/engine/grid.py",
    "json_value": "zarrfs/engine/json_values.py",
    "OBJECT_CODECS": "zarrfs/engine/dtypes.py",
}


def _definitions() -> Counter:
    """(name, file) of every function, method, property and module-level assignment."""
    found: Counter = Counter()
    for package in ("zarrfs", "viewer"):
        for path in (REPO / package).rglob("*.py"):
            tree = ast.parse(path.read_text())
            where = str(path.relative_to(REPO))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    found[node.name, where] += 1
            for node in tree.body:
                targets = node.targets if isinstance(node, ast.Assign) else []
                if isinstance(node, ast.AnnAssign):
                    targets = [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        found[target.id, where] += 1
    return found


def test_each_shared_utility_is_defined_once():
    found = _definitions()
    for name, home in SHARED.items():
        assert [where for (n, where) in found if n == name] == [home], name


def test_the_front_ends_write_json_values_by_the_engine_convention():
    """Bytes as base64 and NaN as "NaN" in the mount's JSON files and the viewer's panel."""
    from viewer.info_panel import jsonable
    from zarrfs.fuse.formats import json_bytes
    from zarrfs.fuse.tree import _pretty_json

    assert jsonable({"fill": b"\x00a", "nan": np.float32("nan")}) == {"fill": "AGE=", "nan": "NaN"}
    assert json.loads(_pretty_json({"fill": b"\x00a"})) == {"fill": "AGE="}
    assert json.loads(json_bytes(np.array([b"\x00a", b""], dtype=object))) == ["AGE=", ""]
