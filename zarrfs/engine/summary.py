"""A node's metadata as a summary: a JSON-friendly dict (``zarrfs info --json``) and an aligned
text block (``zarrfs info``, the mount's ``info.txt``).

The summary needs metadata only, so it is cheap and deterministic; the stored size (which lists
the store) is added only when asked for.
"""

from __future__ import annotations

import json
import math

from .cf_summary import cf_rows, cf_summary
from .errors import ZarrfsError
from .json_values import json_value
from .ome import multiscales
from .sizes import human_size


def _codec_text(codec: dict | str) -> str:
    if not isinstance(codec, dict):  # a bare name, as a listing the codecs failed to build has
        return str(codec)
    config = codec.get("configuration") or {}
    if codec["name"] == "sharding_indexed":
        inner = ", ".join(_codec_text(c) for c in config.get("codecs", []))
        index = ", ".join(_codec_text(c) for c in config.get("index_codecs", []))
        return (
            f"sharding_indexed(inner chunks {list(config.get('chunk_shape', []))}: [{inner}], "
            f"index at {config.get('index_location', 'end')}: [{index}])"
        )
    args = ", ".join(f"{k}={v}" for k, v in config.items() if not isinstance(v, (dict, list)))
    return f"{codec['name']}({args})" if args else codec["name"]


def _array(node, stored_size: bool) -> dict:
    out = {
        "shape": list(node.shape),
        "dtype": str(node.dtype),
        "data_type": node.data_type,
        "chunks": list(node.chunks),
        "shards": list(node.shards) if node.shards else None,
        "codecs": node.codecs,
        "fill_value": json_value(node.fill_value),
        "dimension_names": list(node.dimension_names) if node.dimension_names else None,
        "order": node.order,
        "nbytes": node.nbytes,
        "chunk_grid": list(node.chunk_grid_shape),
        "nchunks": math.prod(node.chunk_grid_shape),
    }
    if stored_size:
        stored = node.stored_size()
        out["stored_bytes"] = stored
        out["compression_ratio"] = (
            round(node.nbytes / stored, 2) if stored and node.nbytes else None
        )
    return out


def _group(node) -> dict:
    members = []
    for name in node.keys():
        try:
            child = node[name]
        except ZarrfsError as exc:  # one broken child must not hide the others
            members.append({"name": name, "kind": "error", "error": exc.message})
            continue
        item = {"name": name, "kind": child.kind}
        if child.kind == "array":
            item.update(shape=list(child.shape), dtype=str(child.dtype), data_type=child.data_type)
        if child.kind == "broken":
            item["node_type"] = child.node_type
        if child.error is not None:
            item["error"] = child.error.message
        members.append(item)
    out: dict = {"members": members}
    ms = multiscales(node)
    if ms:
        out["multiscales"] = [
            {
                "name": m.name,
                "version": m.version,
                "axes": [{"name": a.name, "type": a.type, "unit": a.unit} for a in m.axes],
                "datasets": [
                    {"path": d.path, "scale": list(d.scale) if d.scale else None}
                    for d in m.datasets
                ],
            }
            for m in ms
        ]
    return out


def summary(node, *, stored_size: bool = False, group=None) -> dict:
    """Everything ``zarrfs info`` shows about a node, JSON-serializable. ``group``: the group
    holding an array opened on its own, where its coordinate variables are (default: its
    parent, when the open store has it)."""
    out = {
        "url": node.url,
        "path": "/" + node.path,
        "kind": node.kind,
        "zarr_format": node.zarr_format,
    }
    if node.kind == "array":
        out.update(_array(node, stored_size and node.error is None))
        cf = cf_summary(node, group)
        if cf is not None:
            out["cf"] = cf
    elif node.kind == "broken":
        out.update(node_type=node.node_type, documents=node.stored_metadata)
    else:
        out["implicit"] = node.implicit
        out.update(_group(node))
    out["attributes"] = node.attrs
    if node.error is not None:
        out["error"] = node.error.message
    return out


def _dims(values) -> str:
    return " x ".join(str(v) for v in values) if values else "() (0-d)"


def _member_dtype(m: dict) -> str:
    """The NumPy dtype, except the spec's name for variable-length types (not "object")."""
    return m.get("data_type", m["dtype"]) if m["dtype"] == "object" else m["dtype"]


def _member_text(m: dict) -> str:
    if m["kind"] == "group":
        return f"{m['name']}/"
    text = m["name"]
    if m["kind"] == "array":
        text += f"  {_dims(m['shape'])} {_member_dtype(m)}"
    return text + (f"  (error: {' '.join(m['error'].split())})" if m.get("error") else "")


def format_summary(s: dict) -> str:
    """The summary as aligned text, one fact per line."""
    rows: list[tuple[str, str]] = [
        ("url", s["url"]),
        ("path", s["path"]),
        ("kind", f"{s['kind']} (Zarr v{s['zarr_format'] or '?'})"),
    ]
    if s["kind"] == "broken":
        rows[2] = (
            "kind",
            f"{s.get('node_type') or 'node'}, broken (Zarr v{s['zarr_format'] or '?'})",
        )
        rows.append(("metadata", json.dumps(s["documents"], indent=2, ensure_ascii=False)))
    if s["kind"] == "array":
        rows += [
            ("shape", _dims(s["shape"])),
            (
                "dtype",
                s["dtype"]
                if s["dtype"] == s["data_type"]
                else f"{s['dtype']} (Zarr data type {s['data_type']})",
            ),
            (
                "chunks",
                _dims(s["chunks"]) + f"   ({s['nchunks']} in a {_dims(s['chunk_grid'])} grid)",
            ),
        ]
        if s.get("shards"):
            rows.append(("shards", _dims(s["shards"])))
        rows += [
            ("codecs", " -> ".join(_codec_text(c) for c in s["codecs"]) or "none"),
            ("fill value", json.dumps(s["fill_value"])),
            (
                "dimensions",
                ", ".join(str(n) for n in s["dimension_names"])
                if s.get("dimension_names")
                else "unnamed",
            ),
            ("order", s["order"]),
            (
                "decoded size",
                human_size(s["nbytes"]) if s["nbytes"] is not None else "variable-length elements",
            ),
        ]
        if "stored_bytes" in s:
            ratio = (
                f" ({s['compression_ratio']}x compression)" if s.get("compression_ratio") else ""
            )
            rows.append(("stored size", human_size(s["stored_bytes"]) + ratio))
        if s.get("cf"):
            rows += cf_rows(s["cf"])
    elif s["kind"] != "broken":
        if s.get("implicit"):
            rows[2] = ("kind", f"implicit group (Zarr v{s['zarr_format']}, no zarr.json)")
        members = [_member_text(m) for m in s["members"]]
        rows.append(("members", "\n".join(members) if members else "none"))
        for m in s.get("multiscales", []):
            axes = ", ".join(
                a["name"] + (f" ({a['unit']})" if a.get("unit") else "") for a in m["axes"]
            )
            levels = ", ".join(d["path"] for d in m["datasets"])
            rows.append(
                (
                    "OME-Zarr",
                    f"multiscale {m['name'] or ''} v{m['version'] or '?'}: "
                    f"axes {axes}; levels {levels}".replace("  ", " "),
                )
            )
    attrs = json.dumps(s["attributes"], indent=2, ensure_ascii=False, sort_keys=True)
    rows.append(("attributes", attrs if s["attributes"] else "none"))
    if s.get("error"):
        rows.append(("error", " ".join(s["error"].split())))
    width = max(len(k) for k, _ in rows)
    lines = []
    for key, value in rows:
        first, *rest = value.split("\n")
        lines.append(f"{key:<{width}}  {first}")
        lines.extend(f"{'':<{width}}  {line}" for line in rest)
    return "\n".join(lines) + "\n"
