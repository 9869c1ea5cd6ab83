"""The engine as a reader for tests/conformance/check_reader.py.

``read(store_path, array_path, selection)`` and ``meta(store_path, node_path)`` go through the
public API only, the way a user would: open the store, walk to the node, index it.
"""

from __future__ import annotations

import ast
import functools

import zarrfs.engine as engine


@functools.lru_cache(maxsize=64)
def _root(store_path: str):
    return engine.open(store_path)


def _node(store_path: str, path: str):
    root = _root(store_path)
    return root[path] if path else root


def _selection(text: str):
    tree = ast.parse("_" + text.strip(), mode="eval").body
    node = tree.slice

    def item(n):
        if isinstance(n, ast.Constant) and n.value is Ellipsis:
            return Ellipsis
        if isinstance(n, ast.Slice):
            return slice(
                *(None if p is None else ast.literal_eval(p) for p in (n.lower, n.upper, n.step))
            )
        return ast.literal_eval(n)

    if isinstance(node, ast.Tuple):
        return tuple(item(e) for e in node.elts)
    return item(node)


def read(store_path: str, array_path: str, selection: str):
    return _node(store_path, array_path)[_selection(selection)]


def meta(store_path: str, node_path: str) -> dict:
    node = _node(store_path, node_path)
    out = {"attributes": node.attrs}
    if node.kind == "group":
        out["members"] = node.keys()
    return out
