"""Mount options: the ``-o a,b=c`` strings parsed once into a frozen dataclass.

The same parser serves ``zarrfs mount -o ...`` and the ``mount.zarrfs`` helper that mount(8) calls
for an /etc/fstab line, so options that belong to mount(8) itself (``ro``, ``noauto``, ``_netdev``
...) are dropped here, in one table, instead of being rejected.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from zarrfs.engine import parse_size
from zarrfs.storage_options import with_defaults

#: The store is an immutable snapshot by default: the kernel may keep attributes, names and pages
#: this long (seconds). ``ttl=`` shortens it when the data can change under the mount.
SNAPSHOT_TIMEOUT = 86400.0

#: Options mount(8), systemd and fstab pass that are not ours; accepted and ignored.
SYSTEM_OPTIONS = frozenset(
    {
        "rw",
        "ro",
        "auto",
        "noauto",
        "user",
        "nouser",
        "users",
        "owner",
        "group",
        "_netdev",
        "nofail",
        "defaults",
        "exec",
        "noexec",
        "suid",
        "nosuid",
        "dev",
        "nodev",
        "sync",
        "async",
        "atime",
        "noatime",
        "relatime",
        "norelatime",
        "strictatime",
        "nodiratime",
        "diratime",
        "lazytime",
        "silent",
        "loud",
        "nosymfollow",
        "bg",
        "fg",
    }
)
SYSTEM_PREFIXES = ("x-", "comment=", "helper=", "context=")


@dataclass(frozen=True)
class MountOptions:
    """Everything ``-o`` can say. Field names are the option names."""

    ttl: float | None = None  # None: snapshot; else attribute/entry/page-cache lifetime (s)
    png: bool = False  # opt-in 8-bit PNG previews of planes (size known only after encoding)
    csv: bool = False  # opt-in CSV for small 1-D / 2-D arrays
    cf: bool = False  # opt-in CF-decoded data.cf.npy and plane .cf.npy files
    composite: bool = False  # opt-in RGB .tif of an OME-Zarr plane's channels (generated)
    csv_max_elements: int = 1_000_000
    json_max_elements: int = 10_000_000  # data.json of variable-length arrays
    max_listed: int = 1_000_000  # entries a plane folder lists (all stay reachable by name)
    prefetch: int = 32 << 20  # bytes read ahead of a sequential reader; 0 disables
    kernel_readahead: int = 1 << 20  # the kernel's readahead for this mount (root); 0: unchanged
    push_pages: bool = True  # read-ahead windows stored into the kernel's page cache
    threads: str = "auto"  # FUSE request threads: "single", "multi", "auto" (single if local)
    cache_size: int | None = None  # engine decoded-chunk cache (bytes); None: engine default
    consolidated: bool | None = None
    allow_other: bool = False
    allow_root: bool = False
    uid: int | None = None
    gid: int | None = None
    debug: bool = False  # libfuse debug output (foreground only is useful)
    log_level: str = "INFO"
    follow_symlinks: bool = False  # local stores: read symlinks that lead out of the store
    anon: bool = False  # storage options, so that an fstab line can carry them
    endpoint_url: str | None = None
    storage: tuple[tuple[str, str], ...] = field(default=())  # so.KEY=VALUE

    @property
    def attr_timeout(self) -> float:
        return SNAPSHOT_TIMEOUT if self.ttl is None else self.ttl

    @property
    def keep_page_cache(self) -> bool:
        """Keep the kernel page cache across opens: only while the store is a snapshot."""
        return self.ttl is None


def _parse_bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "yes", "true", "on", ""):
        return True
    if lowered in ("0", "no", "false", "off"):
        return False
    raise ValueError(f"not a yes/no value: {text!r}")


def _parse_yes_no_auto(text: str) -> bool | None:
    return None if text.lower() == "auto" else _parse_bool(text)


def _parse_log_level(text: str) -> str:
    level = text.upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ValueError(f"log_level must be DEBUG, INFO, WARNING or ERROR, not {text!r}")
    return level


def _parse_threads(text: str) -> str:
    value = text.lower()
    if value not in ("auto", "single", "multi"):
        raise ValueError(f"threads must be auto, single or multi, not {text!r}")
    return value


def _parse_ttl(text: str) -> float:
    value = float(text)
    if value < 0:
        raise ValueError("ttl must be >= 0 seconds")
    return value


#: option name -> parser of its value (a flag given without ``=`` parses "").
_PARSERS = {
    "ttl": _parse_ttl,
    "png": _parse_bool,
    "csv": _parse_bool,
    "cf": _parse_bool,
    "composite": _parse_bool,
    "csv_max_elements": int,
    "json_max_elements": int,
    "max_listed": int,
    "prefetch": parse_size,
    "kernel_readahead": parse_size,
    "push_pages": _parse_bool,
    "threads": _parse_threads,
    "cache_size": parse_size,
    "consolidated": _parse_yes_no_auto,
    "allow_other": _parse_bool,
    "allow_root": _parse_bool,
    "uid": int,
    "gid": int,
    "debug": _parse_bool,
    "log_level": _parse_log_level,
    "anon": _parse_bool,
    "follow_symlinks": _parse_bool,
    "endpoint_url": str,
}


def option_names() -> list[str]:
    """Every option ``-o`` takes, for help texts."""
    return sorted(_PARSERS) + ["so.KEY=VALUE"]


def split_option_strings(option_strings: Iterable[str]) -> list[str]:
    """``["a,b=1", "c"]`` -> ``["a", "b=1", "c"]`` (``-o`` may be given several times)."""
    return [item.strip() for text in option_strings for item in text.split(",") if item.strip()]


def is_system_option(item: str) -> bool:
    return item in SYSTEM_OPTIONS or item.startswith(SYSTEM_PREFIXES)


def parse_mount_options(option_strings: Iterable[str]) -> MountOptions:
    """Parse ``-o`` strings; mount(8)'s own options are dropped, unknown ones raise ValueError."""
    values: dict[str, object] = {}
    storage: list[tuple[str, str]] = []
    for item in split_option_strings(option_strings):
        if is_system_option(item):
            continue
        name, has_value, raw = item.partition("=")
        name = name.strip()
        if name.startswith("so."):  # the key as fsspec spells it, "-" and all
            if not has_value or len(name) == 3:
                raise ValueError(f"mount option {name!r} needs a key and a value: so.KEY=VALUE")
            storage.append((name[3:], raw))
            continue
        name = name.replace("-", "_")
        parser = _PARSERS.get(name)
        if parser is None:
            known = ", ".join(sorted(_PARSERS)) + ", so.KEY=VALUE"
            raise ValueError(f"unknown mount option {name!r} (known: {known})")
        if not has_value and parser not in (_parse_bool, _parse_yes_no_auto):
            raise ValueError(f"mount option {name!r} needs a value: {name}=...")
        try:
            values[name] = parser(raw)
        except ValueError as error:
            raise ValueError(f"mount option {name!r}: {error}") from None
    if storage:
        values["storage"] = tuple(storage)
    return MountOptions(**values)  # type: ignore[arg-type]


def mount_storage_options(options: MountOptions, given: dict) -> tuple[MountOptions, dict]:
    """The two ways storage options reach a mount, merged once, where it starts: the command
    line's (``given``: ``--anon``, ``--endpoint-url``, ``-O``) and, where those do not set
    them, the ``-o`` ones (``anon``, ``endpoint_url``, ``so.KEY=VALUE``), by the rules of
    ``zarrfs.storage_options``. Returns the options with ``follow_symlinks`` as either way
    set it (it is the engine's argument, not fsspec's) and no storage options left in them,
    and the storage options for fsspec."""
    storage = with_defaults(
        given, options.storage, anon=options.anon, endpoint_url=options.endpoint_url
    )
    follow = storage.pop("follow_symlinks", False)
    if not isinstance(follow, bool):
        raise ValueError(f"storage option follow_symlinks must be true or false, got {follow!r}")
    merged = replace(
        options,
        follow_symlinks=options.follow_symlinks or follow,
        anon=False,
        endpoint_url=None,
        storage=(),
    )
    return merged, storage


def is_local_url(url: str) -> bool:
    """A path or ``file://`` URL: reads wait only for decoding, never for a network."""
    return url.startswith("file://") or ("://" not in url and "::" not in url)


def single_threaded(options: MountOptions, url: str) -> bool:
    """One FUSE request thread, or libfuse's pool.

    With Python callbacks, several request threads mostly take turns at the GIL: one thread
    serving a sequential reader from read-ahead windows costs ~15% less CPU and reads faster
    (benchmarks/bench_mount.py). But one thread also waits for every read in turn, so stores
    behind a network keep the pool: there a read can wait a round trip that others need not.
    """
    if options.threads == "auto":
        return is_local_url(url)
    return options.threads == "single"


def fuse_mount_kwargs(options: MountOptions, fsname: str) -> dict[str, object]:
    """The libfuse ``-o`` options for this mount (read-only, long timeouts, threads)."""
    kwargs: dict[str, object] = {
        "ro": True,
        "fsname": fsname.replace(",", "_"),
        "subtype": "zarrfs",
        "attr_timeout": options.attr_timeout,
        "entry_timeout": options.attr_timeout,
        "negative_timeout": options.attr_timeout,
        "default_permissions": True,
    }
    if single_threaded(options, fsname):
        kwargs["nothreads"] = True  # libfuse's -s
    if options.allow_other:
        kwargs["allow_other"] = True
    if options.allow_root:
        kwargs["allow_root"] = True
    return kwargs
