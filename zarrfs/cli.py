"""The ``zarrfs`` command: ``info``, ``tree``, ``get``, ``desktop``, and (when installed) ``mount``,
``unmount`` and ``view``, whose modules are imported only when those commands exist.

Errors are translated once, here: every ``ZarrfsError`` or ``OSError`` becomes one line on stderr
and exit status 1 (``--debug`` shows the traceback); usage errors exit 2.
"""

from __future__ import annotations

import argparse
import ast
import json
import logging
import os
import signal
import sys
from pathlib import Path

from zarrfs import __version__
from zarrfs.storage_options import UsageError, common_parser, from_args

log = logging.getLogger(__name__)


# ----------------------------------------------------------------- selections
def _index_item(node: ast.AST):
    """One index of a selection: an integer, a slice of integers, or ``...``."""
    if isinstance(node, ast.Constant) and node.value is Ellipsis:
        return Ellipsis
    if isinstance(node, ast.Slice):
        return slice(
            *(None if part is None else _int(part) for part in (node.lower, node.upper, node.step))
        )
    return _int(node)


def _int(node: ast.AST) -> int:
    """An integer literal, optionally signed (``-1``); booleans are not indices (NumPy reads
    ``True`` as a mask)."""
    sign, literal = 1, node
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign, literal = (-1 if isinstance(node.op, ast.USub) else 1), node.operand
    value = literal.value if isinstance(literal, ast.Constant) else None
    if isinstance(value, bool):
        raise ValueError(f"{ast.unparse(node)!r} is a boolean, not an index")
    if not isinstance(value, int):
        raise ValueError(f"{ast.unparse(node)!r} is not an integer, a slice or '...'")
    return sign * value


def _subscript_items(text: str) -> list[ast.expr]:
    """The index nodes of ``[...]``: exactly one subscript, so that ``"[5][0:2]"`` (which NumPy
    reads as two selections in turn) is refused rather than read as ``[0:2]``."""
    if "#" in text:  # a comment would hide part of the text from the parser
        raise ValueError("'#' has no place in a selection")
    s = text.strip()
    if not s.startswith("["):
        s = f"[{s}]"
    node = ast.parse("_" + s, mode="eval").body
    if not isinstance(node, ast.Subscript):
        raise ValueError("not a single [...] selection")
    if not (isinstance(node.value, ast.Name) and node.value.id == "_"):
        raise ValueError("one [...] only: chained selections such as '[0][1]' are not supported")
    return node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]


def parse_selection(text: str) -> tuple:
    """``"[0, :, 100:200]"`` -> an index tuple of NumPy basic indexing: integers, slices of
    integers and at most one ``...``. Parsed with ``ast``, never evaluated."""
    try:
        selection = tuple(_index_item(i) for i in _subscript_items(text))
        if sum(1 for item in selection if item is Ellipsis) > 1:
            raise ValueError("'...' may appear only once")
    except (SyntaxError, ValueError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise UsageError(
            f"invalid selection {text!r}: {reason}; use NumPy indexing like '[0, :, 100:200]'"
        ) from exc
    return selection


# ----------------------------------------------------------------- commands
def _open(args):
    import zarrfs.engine as engine

    return engine.open(args.url, **from_args(args))


def _parent_group(args, node, depth: int = 1):
    """The group ``depth`` levels above an array opened by its own URL, for its CF coordinates
    (or OME-Zarr image); None when the URL has no such ancestor that is a group (or is an
    fsspec chain, whose parent is not a suffix)."""
    import zarrfs.engine as engine

    url = args.url.rstrip("/")
    parts = url.split("://")[-1].split("/")
    if node.kind != "array" or node.path or "::" in url or len(parts) <= depth:
        return None
    try:
        parent = engine.open(url.rsplit("/", depth)[0], **from_args(args))
    except engine.ZarrfsError:
        return None
    return parent if parent.kind == "group" else None


#: how many groups above an array ``get -o x.tif`` looks for its OME-Zarr image (ngff-zarr's
#: levels sit two below it: ``scale0/image``)
_IMAGE_DEPTH = 3


def _within_parent(args, arr):
    """An array opened by its own URL, opened again through its parent group when it has one:
    its CF coordinates, grid mapping and OME-Zarr image live there (``get -o x.tif``); through
    a group further up when that one declares it an image's level."""
    from zarrfs.tiff_meta import level_of

    best = arr
    for depth in range(1, _IMAGE_DEPTH + 1):
        parent = _parent_group(args, arr, depth)
        if parent is None:
            return best
        below = "/".join(args.url.rstrip("/").rsplit("/", depth)[1:])
        try:
            found = parent[below]
        except Exception:  # the array as opened still reads; only its tags are lost
            return best
        if getattr(found, "kind", None) != "array":
            return best
        level = level_of(found)
        if depth == 1 or level is not None:
            best = found
        if level is not None:
            return best
    return best


def cmd_info(args) -> int:
    from zarrfs.engine import format_summary, summary

    node = _open(args)
    s = summary(node, stored_size=args.stored_size, group=_parent_group(args, node))
    path = node.read_path if getattr(args, "debug", False) and node.kind == "array" else None
    if args.json:
        if path is not None:
            s = {**s, "read_path": {"native": path.native, "reason": path.reason}}
        print(json.dumps(s, indent=2, ensure_ascii=False, default=str))
    else:
        sys.stdout.write(format_summary(s, attributes=True if args.attrs else None))
        if path is not None:
            print(f"read path: {path.describe()}")
    if node.error is not None:  # what it has is shown; why its data cannot be read, as an error
        sys.stdout.flush()
        raise node.error.at(node.error.path or node.url) from node.error
    return 0


def cmd_tree(args) -> int:
    root = _open(args)
    label = root.url + (f"  {_shape(root)}" if root.kind == "array" else "")
    print(label + (f"  (error: {' '.join(root.error.message.split())})" if root.error else ""))
    if root.kind == "group":
        _print_tree(root, "", args.depth)
    return 0


def _shape(arr) -> str:
    dtype = arr.data_type if arr.dtype.kind == "O" else arr.dtype  # "string", not "object"
    return f"{' x '.join(map(str, arr.shape)) or '()'} {dtype}"


def _print_tree(group, prefix: str, depth: int | None) -> None:
    if depth is not None and depth <= 0:
        return
    from zarrfs.engine import ZarrfsError

    names = group.keys()
    for i, name in enumerate(names):
        last = i == len(names) - 1
        branch = "└── " if last else "├── "
        try:
            child = group[name]
        except ZarrfsError as exc:  # one node that cannot be fetched must not hide the rest
            print(f"{prefix}{branch}{name}  (error: {' '.join(exc.message.split())})")
            continue
        if child.kind != "group":  # an array, or a broken node: marked with its reason
            shape = f"  {_shape(child)}" if child.kind == "array" else ""
            error = f"  (error: {' '.join(child.error.message.split())})" if child.error else ""
            print(f"{prefix}{branch}{name}{shape}{error}")
        else:
            print(f"{prefix}{branch}{name}/")
            _print_tree(
                child, prefix + ("    " if last else "│   "), None if depth is None else depth - 1
            )


def cmd_get(args) -> int:
    from zarrfs.cli_get import read_selection, write_output

    arr = _open(args)
    if arr.kind == "broken":
        arr.read()  # raises why its data cannot be read
    if arr.kind != "array":
        raise UsageError(f"{args.url} is a group; `get` reads arrays")
    selection = parse_selection(args.selection)
    if args.sel:
        selection = _by_value(args, arr, selection)
    out = Path(args.output)
    suffix = out.suffix.lower()
    if suffix not in (".npy", ".tif", ".tiff", ".csv"):
        raise UsageError(f"unsupported output {out.name!r}: use .npy, .tif or .csv")
    progress = args.progress or sys.stderr.isatty()
    from zarrfs.engine import SelectionError

    if suffix in (".tif", ".tiff"):
        arr = _within_parent(args, arr)
    try:
        data = read_selection(arr, selection, progress=progress, decode=args.decode)
    except SelectionError as exc:  # out of range for this array: say which array
        raise SelectionError(
            f"{args.url}: selection {args.selection}: {exc.message}",
            path=arr.url,
            store_url=arr.store.url,
            node_path=arr.path,
        ) from exc
    data = write_output(data, out, suffix, source=arr, selection=selection, decoded=args.decode)
    print(
        f"wrote {out} ({' x '.join(map(str, data.shape)) or 'scalar'} {data.dtype})",
        file=sys.stderr,
    )
    return 0


def _by_value(args, arr, selection: tuple) -> tuple:
    """``--sel DIM=VALUE`` (by coordinate value, as xarray's ``sel``) put into ``selection``."""
    from zarrfs.cli_get import by_value
    from zarrfs.engine import parse_sel, select_by_value

    try:
        wanted = dict(parse_sel(text) for text in args.sel)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    group = _parent_group(args, arr) or arr.parent
    return by_value(arr, selection, select_by_value(arr, group, wanted))


# ----------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zarrfs",
        description="Look into Zarr v2/v3 data: summaries, trees, selections, "
        "a FUSE mount and a desktop viewer.",
    )
    parser.add_argument("--version", action="version", version=f"zarrfs {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    common = common_parser()

    p = sub.add_parser("info", parents=[common], help="a node's metadata as a summary")
    p.add_argument("url")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--attrs",
        action="store_true",
        help="print the attributes' JSON whole (long ones are otherwise noted in one line)",
    )
    p.add_argument(
        "--stored-size",
        action="store_true",
        help="also list the store for the stored size and compression ratio",
    )
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("tree", parents=[common], help="the hierarchy")
    p.add_argument("url")
    p.add_argument("--depth", type=int, default=None, help="levels to show")
    p.set_defaults(func=cmd_tree)

    p = sub.add_parser("get", parents=[common], help="a selection to .npy, .tif or .csv")
    p.add_argument("url")
    p.add_argument(
        "selection",
        nargs="?",
        default="[...]",
        help="NumPy indexing, e.g. '[0, :, 100:200]' (default: everything)",
    )
    p.add_argument(
        "--sel",
        action="append",
        metavar="DIM=VALUE",
        help="select by coordinate value, as xarray's sel: time=2000-03-01 (the nearest), "
        "lat=10:20 (both ends included); repeatable",
    )
    p.add_argument(
        "--decode",
        action="store_true",
        help="CF-decode the values (scale_factor/add_offset, missing values as NaN, dates)",
    )
    p.add_argument("-o", "--output", required=True, help="FILE.npy, FILE.tif or FILE.csv")
    p.add_argument(
        "--progress",
        action="store_true",
        help="show a progress bar even when stderr is not a terminal",
    )
    p.set_defaults(func=cmd_get)

    from zarrfs.cli_log import add_parser as add_log_parser

    add_log_parser(sub, common)
    _optional_subcommands(sub, common)
    from zarrfs.desktop import add_parser as add_desktop_parser

    add_desktop_parser(sub)
    return parser


def _optional_subcommands(sub, common) -> None:
    """``mount``/``unmount`` and ``view`` come from their packages, when those import."""
    try:
        from zarrfs.fuse.cli import add_parsers
    except ImportError as exc:
        log.debug("no mount subcommands: %s", exc)
    else:
        add_parsers(sub, common)
    try:
        from zarrfs.viewer.cli import add_parser
    except ImportError as exc:
        log.debug("no view subcommand: %s", exc)
    else:
        add_parser(sub, common)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if argv is None:  # this process's own command line: no secret in `ps` (view, get ...)
        from zarrfs.process_title import hide_secrets

        hide_secrets()
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="zarrfs: %(levelname)s: %(message)s")
    if args.verbose == 0:
        logging.getLogger("zarrfs.engine").setLevel(logging.ERROR)
    from zarrfs.engine import ZarrfsError

    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        parser.exit(2, f"zarrfs: error: {exc}\n")
    except BrokenPipeError:  # ``zarrfs tree URL | head``: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return 128 + signal.SIGPIPE
    except (ZarrfsError, OSError, ValueError) as exc:
        if args.debug:
            raise
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        print(f"zarrfs: error: {' '.join(message.split())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("zarrfs: interrupted", file=sys.stderr)
        return 130
    return 0  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
