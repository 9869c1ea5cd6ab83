"""``zarrfs mount`` and ``zarrfs unmount``: argument parsing only; the work is in ``daemon``.

``zarrfs/cli.py`` calls :func:`add_parsers` with its subparsers and the parent parser of
``zarrfs.storage_options`` carrying the storage flags (``--anon``, ``--endpoint-url``,
``-O key=value``). Nothing here loads libfuse, and nothing here imports ``zarrfs.cli``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from zarrfs.storage_options import common_parser, from_args

from .options import option_names

#: storage options (a JSON object) that a program starting a mount hands over out of sight of
#: ``ps``: a process's environment is readable by its owner only, its command line by every
#: user. The viewer's "Open as a file" mounts so; the command line's flags win over it.
STORAGE_OPTIONS_ENV = "ZARRFS_MOUNT_STORAGE_OPTIONS"


def add_parsers(subparsers, common: argparse.ArgumentParser) -> None:
    mount = subparsers.add_parser(
        "mount",
        parents=[common],
        help="mount a Zarr store read-only as a folder of ordinary files",
        description="Mount URL read-only at MOUNTPOINT: groups and arrays become directories, "
        "arrays offer data.npy/data.raw/data.tif and planes/. Daemonizes unless --foreground.",
    )
    mount.add_argument("url", help="store URL or path (local, file://, http(s)://, s3://, ...)")
    mount.add_argument("mountpoint", help="an existing directory")
    mount.add_argument(
        "-o",
        dest="mount_options",
        action="append",
        default=[],
        metavar="OPT[,OPT...]",
        help=f"mount options (README: 'Mount options'): {', '.join(option_names())}; "
        "mount(8)'s own options (ro, noauto, _netdev ...) are ignored",
    )
    mount.add_argument(
        "-f", "--foreground", action="store_true", help="stay in the foreground (logs to stderr)"
    )
    mount.add_argument("--log-file", metavar="FILE", help="append the daemon's log to FILE")
    mount.set_defaults(func=run_mount)

    unmount = subparsers.add_parser(
        "unmount", help="unmount a zarrfs mount (also a stale one left by a killed daemon)"
    )
    unmount.add_argument("mountpoint")
    unmount.set_defaults(func=run_unmount)


def run_mount(args: argparse.Namespace) -> int:
    from zarrfs.process_title import hide_secrets

    from .daemon import mount
    from .options import mount_storage_options, parse_mount_options

    hide_secrets()  # before the fork: the daemon never shows -O secret=... to `ps`

    try:
        # both ways storage options come (flags, -o), merged once, here
        given = {**_handed_over(), **from_args(args)}
        options, storage = mount_storage_options(parse_mount_options(args.mount_options), given)
    except ValueError as error:  # a mount option or a storage option (StorageOptionError)
        print(f"zarrfs mount: {error}", file=sys.stderr)
        return 2
    return mount(
        args.url,
        args.mountpoint,
        options,
        storage,
        foreground=args.foreground,
        log_file=args.log_file,
    )


def _handed_over() -> dict:
    """The storage options in :data:`STORAGE_OPTIONS_ENV` (taken out of the environment, so
    the daemon does not keep them there), or none."""
    text = os.environ.pop(STORAGE_OPTIONS_ENV, "")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{STORAGE_OPTIONS_ENV} is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{STORAGE_OPTIONS_ENV} must hold a JSON object, not {text[:40]!r}")
    return value


def run_unmount(args: argparse.Namespace) -> int:
    from .daemon import unmount

    return unmount(args.mountpoint)


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point (``python -m zarrfs.fuse.cli mount ...``) for tests and helpers."""
    common = common_parser()
    parser = argparse.ArgumentParser(prog="zarrfs")
    subparsers = parser.add_subparsers(required=True)
    add_parsers(subparsers, common)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
