"""Storage options, and the flags every command shares: one rule set for the command line, the
mount, the viewer's command line and its URL dialog.

fsspec filesystems take keyword arguments, "storage options". A user gives them as
``--anon`` and ``--endpoint-url URL``, as ``-O KEY=VALUE`` (repeatable), as the mount's
``-o anon,endpoint_url=URL,so.KEY=VALUE`` (what an /etc/fstab line can carry) or in the viewer's
URL dialog. Everywhere the same rules hold:

* ``anon`` and ``endpoint_url`` are top-level options (s3fs and gcsfs take them so);
* a value is JSON when it parses (``true``, ``3``, ``{...}``), else the string as given;
* a dotted key nests: ``client_kwargs.region_name=eu-west-1`` is
  ``{"client_kwargs": {"region_name": "eu-west-1"}}``;
* a later setting wins, except where a caller keeps what is set already (the mount's ``-o``
  under the command line's flags).

Below every room of the house: this module imports neither the engine nor a front end, so the
mount daemon and the viewer use it without importing a command-line module.
"""

from __future__ import annotations

import argparse
import copy
import json
from collections.abc import Iterable


class UsageError(Exception):
    """A command line that does not make sense (the commands exit with status 2)."""


class StorageOptionError(UsageError, ValueError):
    """A storage option that cannot be read: no ``=``, no key, or a key under a plain value."""


def option_value(text: str) -> object:
    """A ``KEY=VALUE`` option's value: JSON when it parses (true, 3, {...}), else the string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def split_option(item: str, source: str = "-O") -> tuple[str, str]:
    """``"KEY=VALUE"`` -> ``(KEY, VALUE)``, the value still text; ``source`` names where the
    item came from in the error."""
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise StorageOptionError(f"{source} expects key=value, got {item!r}")
    return key, text


def set_option(options: dict, key: str, text: str, *, keep: bool = False) -> None:
    """``options[key] = option_value(text)``, a dotted key nesting; with ``keep``, a key that is
    set already stays as it is."""
    *parents, leaf = key.split(".")
    target = options
    for parent in parents:
        child = target.setdefault(parent, {})
        if not isinstance(child, dict):
            raise StorageOptionError(
                f"storage option {key!r}: {parent!r} is already set to {child!r}"
            )
        target = child
    if not (keep and leaf in target):
        target[leaf] = option_value(text)


def storage_options(
    items: Iterable[str] = (),
    *,
    anon: bool = False,
    endpoint_url: str | None = None,
    profile: str | None = None,
    source: str = "-O",
) -> dict:
    """fsspec storage options from the named fields and ``KEY=VALUE`` items (the items win)."""
    options: dict = {}
    if anon:
        options["anon"] = True
    if endpoint_url:
        options["endpoint_url"] = endpoint_url
    if profile:
        options["profile"] = profile
    for item in items:
        set_option(options, *split_option(item, source))
    return options


def with_defaults(
    options: dict,
    pairs: Iterable[tuple[str, str]] = (),
    *,
    anon: bool = False,
    endpoint_url: str | None = None,
) -> dict:
    """A copy of ``options`` with the named fields and ``(KEY, VALUE)`` pairs added where
    ``options`` does not set them already."""
    merged = copy.deepcopy(options)
    if anon:
        merged.setdefault("anon", True)
    if endpoint_url:
        merged.setdefault("endpoint_url", endpoint_url)
    for key, text in pairs:
        set_option(merged, key, text, keep=True)
    return merged


def option_items(options: dict, prefix: str = "") -> list[str]:
    """``KEY=VALUE`` items that :func:`storage_options` turns back into ``options``: nested
    dicts as dotted keys, values as JSON."""
    items: list[str] = []
    for key, value in options.items():
        if isinstance(value, dict) and value and "." not in key:
            items.extend(option_items(value, f"{prefix}{key}."))
        else:
            items.append(f"{prefix}{key}={json.dumps(value)}")
    return items


#: the flags choosing an Icechunk repository's version, with the storage option each becomes
VERSION_FLAGS = {
    "branch": "the tip of this branch",
    "tag": "the snapshot this tag names",
    "snapshot": "the snapshot with this id (see `zarrfs log`)",
}


def from_args(args: argparse.Namespace) -> dict:
    """The storage options of the shared flags (``--anon``, ``--endpoint-url``, ``-O``)."""
    options = storage_options(
        getattr(args, "storage_option", None) or (),
        anon=getattr(args, "anon", False),
        endpoint_url=getattr(args, "endpoint_url", None),
    )
    for name in VERSION_FLAGS:  # an Icechunk repository's version, as the engine takes it
        if getattr(args, name, None):
            options[name] = getattr(args, name)
    return options


def common_parser() -> argparse.ArgumentParser:
    """The flags every command that opens a store takes: storage options, and ``-v`` /
    ``--debug`` after the command as well as before it."""
    common = argparse.ArgumentParser(add_help=False)
    output = common.add_argument_group("output")  # also before the command (main parser)
    output.add_argument(
        "-v", "--verbose", action="count", default=argparse.SUPPRESS, help="log more"
    )
    output.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks of errors"
    )
    group = common.add_argument_group("storage options")
    group.add_argument("--anon", action="store_true", help="anonymous access (public buckets)")
    group.add_argument("--endpoint-url", metavar="URL", help="S3-compatible endpoint")
    group.add_argument(
        "-O",
        dest="storage_option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="fsspec storage option (repeatable; JSON values; dotted keys nest)",
    )
    version = common.add_argument_group("version (Icechunk repositories; default: branch main)")
    exclusive = version.add_mutually_exclusive_group()
    for name, what in VERSION_FLAGS.items():
        exclusive.add_argument(f"--{name}", metavar=name.upper(), help=what)
    return common
