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
from .ome import image
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


def codecs_text(codecs) -> str:
    """An array's codec chain as ``zarrfs info`` prints it:
    ``bytes(endian=little) -> blosc(cname=lz4, clevel=5, ...)``."""
    return " -> ".join(_codec_text(c) for c in codecs) or "none"


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
    try:
        found = image(node)
    except ZarrfsError as exc:  # malformed OME metadata: the group's summary still stands
        out["ome_error"] = exc.message
        found = None
    if found is not None:
        out.update(_ome_image(found))
    return out


def _ome_image(found) -> dict:
    m = found.multiscale
    out: dict = {
        "multiscales": [
            {
                "name": m.name,
                "version": m.version,
                "axes": [{"name": a.name, "type": a.type, "unit": a.unit} for a in m.axes],
                "datasets": [
                    {
                        "path": d.path,
                        "scale": list(d.scale) if d.scale else None,
                        "translation": list(d.translation) if d.translation else None,
                    }
                    for d in m.datasets
                ],
            }
        ]
    }
    if found.omero is not None:
        out["channels"] = [
            {
                "label": c.label,
                "color": "".join(f"{v:02X}" for v in c.color),
                "window": [c.window.start, c.window.end] if c.window else None,
                "active": c.active,
            }
            for c in found.omero.channels
        ]
        out["default_z"], out["default_t"] = found.omero.default_z, found.omero.default_t
    if found.labels:
        out["labels"] = list(found.labels)
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
    elif node.kind == "broken":  # its attributes raise: the documents show what is stored
        out.update(node_type=node.node_type, documents=node.stored_metadata)
    else:
        out["implicit"] = node.implicit
        out.update(_group(node))
    if node.kind != "broken":
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


def _physical(value: float, unit: str | None) -> str:
    return f"{value:g} {unit}" if unit else f"{value:g}"


def _ome_rows(s: dict) -> list[tuple[str, str]]:
    """An OME-Zarr image: its multiscale, pixel sizes per level, channels, default plane, labels."""
    rows = [("OME-Zarr", f"cannot be used: {s['ome_error']}")] if s.get("ome_error") else []
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
        sizes = []
        for d in m["datasets"]:
            if d["scale"] and len(d["scale"]) == len(m["axes"]):
                each = ", ".join(
                    f"{a['name']} {_physical(v, a.get('unit'))}"
                    for a, v in zip(m["axes"], d["scale"], strict=True)
                    if a.get("type") != "channel"
                )
                sizes.append(f"{d['path']}: {each}")
        if sizes:
            rows.append(("pixel sizes", "\n".join(sizes)))
    channels = [
        f"{k}: {c['label']}  #{c['color']}"
        + (f"  window {c['window'][0]:g}-{c['window'][1]:g}" if c["window"] else "  window auto")
        + ("" if c["active"] else "  (inactive)")
        for k, c in enumerate(s.get("channels", []))
    ]
    if channels:
        rows.append(("channels", "\n".join(channels)))
    defaults = [f"{k} {s[f'default_{k}']}" for k in ("z", "t") if s.get(f"default_{k}") is not None]
    if defaults:
        rows.append(("default plane", ", ".join(defaults)))
    if s.get("labels"):
        rows.append(("labels", ", ".join(s["labels"])))
    return rows


#: attribute JSON longer than this many lines is noted in one line unless asked for
ATTRIBUTE_LINES = 24


def _attribute_rows(attributes: dict, full: bool | None, summarised: bool) -> tuple[str, str]:
    """The attributes as JSON, or one line saying what they hold and how big they are: when
    ``full`` is False, or by default (None) when the summary already shows what they say (an
    OME-Zarr image's multiscales and channels) or they run past ``ATTRIBUTE_LINES`` lines."""
    if not attributes:
        return ("attributes", "none")
    text = json.dumps(attributes, indent=2, ensure_ascii=False, sort_keys=True)
    lines = text.count("\n") + 1
    if full or (full is None and not summarised and lines <= ATTRIBUTE_LINES):
        return ("attributes", text)
    size = len(json.dumps(attributes, ensure_ascii=False, separators=(",", ":")).encode())
    keys = ", ".join(sorted(attributes))
    return (
        "attributes",
        f"{keys} ({human_size(size)} of JSON, {lines} lines; --attrs or --json prints them)",
    )


def format_summary(s: dict, *, attributes: bool | None = None) -> str:
    """The summary as aligned text, one fact per line. ``attributes``: True prints the
    attributes' JSON whole, False as a one-line note, None (default) whole when short and not
    already summarised (``_attribute_rows``)."""
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
            ("codecs", codecs_text(s["codecs"])),
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
        rows += _ome_rows(s)
    if "attributes" in s:  # a broken node's are in its documents
        summarised = bool(s.get("multiscales") or s.get("ome_error"))
        rows.append(_attribute_rows(s["attributes"], attributes, summarised))
    if s.get("error"):
        rows.append(("error", " ".join(s["error"].split())))
    width = max(len(k) for k, _ in rows)
    lines = []
    for key, value in rows:
        first, *rest = value.split("\n")
        lines.append(f"{key:<{width}}  {first}")
        lines.extend(f"{'':<{width}}  {line}" for line in rest)
    return "\n".join(lines) + "\n"
