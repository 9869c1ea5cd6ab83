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
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show tracebacks of errors (info: also which path reads an array, and why)",
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


# ------------------------------------------------------------------------- obstore transport

#: ``-O transport=fsspec`` (or ``ZARRFS_TRANSPORT=fsspec``) reads through fsspec instead
TRANSPORTS = ("obstore", "fsspec")

#: fsspec's spellings (s3fs, gcsfs, adlfs, HTTPFileSystem) of what obstore calls otherwise, by
#: service; a dotted name is a nested option (``client_kwargs.region_name``)
_RENAMED = {
    "s3": {
        "key": "access_key_id",
        "secret": "secret_access_key",
        "token": "session_token",
        "endpoint_url": "endpoint",
        "client_kwargs.endpoint_url": "endpoint",
        "client_kwargs.region_name": "region",
        "region_name": "region",
        "requester_pays": "request_payer",
    },
    "gcs": {"endpoint_url": "base_url"},
    "azure": {"sas_token": "sas_key", "endpoint_url": "endpoint", "account_url": "endpoint"},
    "http": {},
}
#: obstore's client options (the same for every service), given as plain keys or under
#: ``client_options.``; fsspec's ``headers`` / ``client_kwargs.headers`` are its default headers
_CLIENT_OPTIONS = frozenset(
    "allow_http allow_invalid_certificates connect_timeout default_content_type default_headers "
    "http1_only http2_only pool_idle_timeout pool_max_idle_per_host proxy_url "
    "proxy_ca_certificate proxy_excludes root_certificate randomize_addresses read_timeout "
    "timeout user_agent".split()
)
_HEADERS = ("headers", "client_kwargs.headers")
#: options fsspec's backends take that ask nothing of a read through obstore
_HARMLESS = frozenset(
    {"project", "use_listings_cache", "listings_cache_expiry_time", "skip_instance_cache"}
)


def _flat(options: dict, prefix: str = "") -> dict[str, object]:
    """Nested options as dotted keys (``{"client_kwargs": {"a": 1}}`` -> ``client_kwargs.a``),
    the values of a header dict kept whole."""
    out: dict[str, object] = {}
    for key, value in options.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and name not in _HEADERS + ("client_options",):
            out.update(_flat(value, f"{name}."))
        else:
            out[name] = value
    return out


def _config_value(value: object) -> object:
    """obstore's configuration is text (``"true"``, ``"3"``); dicts stay (headers)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, (str, dict)) else str(value)


def obstore_options(service: str, options: dict) -> tuple[dict, dict, str | None]:
    """fsspec-style storage options as obstore's ``(config, client_options, aws_profile)`` for
    ``service`` (s3, gcs, azure, http). fsspec's names are translated (``key`` is
    ``access_key_id``, ``endpoint_url`` is ``endpoint``, ``anon`` is ``skip_signature``, an
    Azure ``connection_string`` its parts); obstore's own names pass as they are (obstore
    refuses unknown ones). An fsspec option obstore cannot honour is a StorageOptionError
    naming ``-O transport=fsspec``, never dropped."""
    config: dict = {}
    client: dict = {}
    profile: str | None = None
    for key, value in _flat(options).items():
        if key in _HARMLESS:
            continue
        leaf = key.rsplit(".", 1)[-1]
        if key == "anon" or (service == "gcs" and key == "token" and value == "anon"):
            if value:
                config["skip_signature"] = "true"
        elif key == "use_ssl" and service in ("s3", "gcs"):  # s3fs': False for http://
            if not value:
                client["allow_http"] = "true"
        elif key == "profile" and service == "s3":
            profile = str(value)
        elif key == "connection_string" and service == "azure":
            config.update(azure_connection_string(str(value)))
        elif key == "token" and service == "gcs":
            config["application_credentials"] = str(value)
        elif key in _HEADERS and service == "http" and isinstance(value, dict):
            client["default_headers"] = {str(k): str(v) for k, v in value.items()}
        elif key in _RENAMED.get(service, {}):
            config[_RENAMED[service][key]] = _config_value(value)
        elif key == "client_options" and isinstance(value, dict):
            client.update({k: _config_value(v) for k, v in value.items()})
        elif key.startswith("client_options.") or key in _CLIENT_OPTIONS:
            client[leaf] = _config_value(value)
        elif "." in key or service == "http":
            raise StorageOptionError(
                f"storage option {key!r} has no equivalent in the obstore transport for "
                f"{service} stores; read through fsspec with -O transport=fsspec"
            )
        else:
            config[key] = _config_value(value)
    if isinstance(config.get("sas_key"), str):  # as the portal copies it, with its "?"
        config["sas_key"] = config["sas_key"].lstrip("?")
    endpoint = config.get("endpoint")
    if isinstance(endpoint, str) and endpoint.startswith("http://"):
        client.setdefault("allow_http", "true")
    return config, client, profile


def azure_connection_string(text: str) -> dict[str, str]:
    """An Azure storage connection string (``AccountName=...;AccountKey=...;BlobEndpoint=...``,
    as the portal, the az CLI and Azurite give it) as obstore's Azure configuration."""
    parts = dict(part.split("=", 1) for part in text.strip().strip(";").split(";") if "=" in part)
    names = {
        "AccountName": "account_name",
        "AccountKey": "account_key",
        "SharedAccessSignature": "sas_key",
        "BlobEndpoint": "endpoint",
    }
    config = {names[k]: v.strip() for k, v in parts.items() if k in names}
    if parts.get("UseDevelopmentStorage", "").lower() == "true":
        config["use_emulator"] = "true"  # Azurite's well-known address and account
    elif "endpoint" not in config and "account_name" in config:
        scheme = parts.get("DefaultEndpointsProtocol", "https")
        suffix = parts.get("EndpointSuffix", "core.windows.net")
        config["endpoint"] = f"{scheme}://{config['account_name']}.blob.{suffix}"
    known = {*names, "DefaultEndpointsProtocol", "EndpointSuffix", "UseDevelopmentStorage"}
    unknown = set(parts) - known - {"QueueEndpoint", "TableEndpoint", "FileEndpoint"}
    if unknown or not ("account_name" in config or "use_emulator" in config):
        raise StorageOptionError(
            "Azure connection string: expected AccountName=...;AccountKey=... (or "
            f"SharedAccessSignature=..., BlobEndpoint=...), got the keys {sorted(parts)}"
        )
    return config
