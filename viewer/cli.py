"""The ``zarrfs view`` subcommand (``zarrfs/cli.py`` adds it when the viewer extra is installed).

Storage options come from the shared flags of ``zarrfs.storage_options`` (``--anon``,
``--endpoint-url``, ``-O key=value``); Qt is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys

from zarrfs.storage_options import StorageOptionError, common_parser, from_args

from . import early_open
from .view_state import COLORMAPS

logger = logging.getLogger(__name__)


def parse_indices(text: str) -> list[int | str]:
    """``"12,0"`` -> ``[12, 0]``: positions along the axes with a slider. A part that is not
    an integer (``2000-03-01``, ``850``-like values are integers) stays text: a date or a
    coordinate value, placed on the nearest element once the axis's coordinates are read;
    ``#4`` is the index 4."""
    out: list[int | str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        number = part.removeprefix("#")
        try:
            out.append(int(number))
        except ValueError:
            if part.startswith("#"):
                raise argparse.ArgumentTypeError(f"--index: {part!r} is not an index") from None
            out.append(part)
    return out


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--size expects WIDTHxHEIGHT: {text!r}") from exc
    return w, h


def parse_cache_size(text: str) -> int:
    """``--cache-size``: sizes as the rest of zarrfs takes them (``engine.parse_size``)."""
    import zarrfs.engine as engine

    try:
        return engine.parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


#: Qt platforms that draw on a display, and the variables that name one
_DISPLAY_PLATFORMS = {"xcb": ("DISPLAY",), "wayland": ("WAYLAND_DISPLAY",)}


def no_display(environ=os.environ) -> bool:
    """Whether Qt would find no display to open a window on: it then aborts the process (exit
    134, a message about xcb plugins), so the command says so itself first. A platform chosen
    with ``QT_QPA_PLATFORM`` other than xcb or wayland (offscreen, vnc, eglfs) needs none."""
    wanted = [p.split(":")[0].strip() for p in environ.get("QT_QPA_PLATFORM", "").split(";")]
    wanted = [p for p in wanted if p] or ["xcb", "wayland"]
    if any(not p.startswith(tuple(_DISPLAY_PLATFORMS)) for p in wanted):
        return False
    names = {
        v for p in wanted for k, vs in _DISPLAY_PLATFORMS.items() if p.startswith(k) for v in vs
    }
    return not any(environ.get(name) for name in names)


def add_parser(subparsers, common: argparse.ArgumentParser | None = None):
    """Add ``view`` to ``subparsers``; ``common`` carries the storage option flags."""
    parser = subparsers.add_parser(
        "view",
        parents=[common] if common is not None else [],
        help="open the desktop viewer",
        description="Browse a Zarr store and view its arrays, loading only what is on screen.",
    )
    parser.add_argument("url", nargs="?", help="store URL or local folder (optional)")
    parser.add_argument("--node", metavar="PATH", help="node to select, e.g. /group/array")
    parser.add_argument(
        "--index",
        type=parse_indices,
        metavar="I,J",
        help="slider positions for the axes with a slider, e.g. 12,0; a date or a coordinate "
        "value picks the nearest element (2000-03-01,850)",
    )
    parser.add_argument(
        "--screenshot", metavar="PNG", help="render once loading is done, save the window, and exit"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds to wait for loading in --screenshot mode (default 60)",
    )
    parser.add_argument(
        "--size", type=parse_size, metavar="WxH", help="window size, e.g. 1600x1000"
    )
    parser.add_argument(
        "--cache-size",
        type=parse_cache_size,
        metavar="BYTES",
        help="decoded-chunk cache budget, e.g. 2G (default: engine's)",
    )
    look = parser.add_argument_group("how the array looks (for a --screenshot figure)")
    look.add_argument(
        "--channels",
        type=lambda text: tuple(p.strip() for p in text.split(",") if p.strip()),
        metavar="NAMES",
        help="OME-Zarr channels to show, by name or index: DAPI,GFP",
    )
    look.add_argument("--labels", metavar="NAME", help="OME-Zarr label image to draw over it")
    look.add_argument("--colormap", choices=COLORMAPS, metavar="NAME", help="e.g. viridis")
    look.add_argument("--ortho", action="store_true", help="show the orthogonal views")
    parser.set_defaults(func=run_view)
    return parser


def run_view(args: argparse.Namespace) -> int:
    try:
        options = from_args(args)
    except StorageOptionError as exc:
        print(f"zarrfs view: {exc}", file=sys.stderr)
        return 2
    if not args.screenshot and no_display():
        print("zarrfs view: no display; use --screenshot PNG or set DISPLAY", file=sys.stderr)
        return 1
    gc.disable()  # the viewer collects on its GUI thread (qt_compat): none while Qt imports
    url = args.url
    if url and "://" not in url and "::" not in url:
        url = os.path.abspath(url)
    # the store opens while Qt and pyqtgraph load and the window is built (early_open)
    opening = early_open.start(url, options, args.node, warm=not args.index) if url else None
    try:
        from . import app
        from .view_options import ViewOptions
    except ImportError as exc:
        print(
            f"zarrfs view: the viewer needs PySide6 and pyqtgraph "
            f"(pip install 'zarrfs[viewer]'): {exc}",
            file=sys.stderr,
        )
        return 2
    code = app.run(
        url,
        options,
        node=args.node,
        indices=args.index,
        screenshot=args.screenshot,
        timeout=args.timeout,
        cache_size=args.cache_size,
        size=args.size,
        opening=opening,
        look=ViewOptions(args.channels, args.labels, args.colormap, args.ortho),
    )
    if args.screenshot:
        # The picture is saved and every message printed: leave without the interpreter's
        # teardown of Qt's and pyqtgraph's objects, which under load crashed (a segfault in a
        # weakref callback: 2 runs in 12 at once) or hung, after the work was done.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def main(argv: list[str] | None = None) -> int:
    """``python -m zarrfs.viewer.cli``: the ``view`` command on its own, with the storage flags."""
    parser = argparse.ArgumentParser(prog="zarrfs")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub, common_parser())
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
