"""The one rule set for storage options (``zarrfs/storage_options.py``), as each front end
uses it: the command line's flags, the mount's ``-o`` under them, the dialog's round trip."""

from __future__ import annotations

import pytest

from zarrfs.fuse.options import mount_storage_options, parse_mount_options
from zarrfs.storage_options import (
    StorageOptionError,
    UsageError,
    common_parser,
    from_args,
    option_items,
    storage_options,
)

NESTED = {
    "anon": True,
    "endpoint_url": "http://127.0.0.1:9000",
    "use_ssl": False,
    "client_kwargs": {"region_name": "eu-west-1", "headers": {"X-Probe": "abc"}},
}


def test_flags_values_and_dotted_keys():
    args = common_parser().parse_args(
        [
            "--anon",
            "--endpoint-url",
            "http://127.0.0.1:9000",
            "-O",
            "use_ssl=false",
            "-O",
            "client_kwargs.region_name=eu-west-1",
            "-O",
            "client_kwargs.headers.X-Probe=abc",
        ]
    )
    assert from_args(args) == NESTED


def test_the_dialog_round_trip_keeps_nesting_and_the_endpoint_in_its_place():
    """What the dialog shows as lines reads back to the same options."""
    fields = dict(NESTED)
    anon, endpoint = fields.pop("anon"), fields.pop("endpoint_url")
    assert storage_options(option_items(fields), anon=anon, endpoint_url=endpoint) == NESTED


def test_mount_options_fill_in_under_the_command_line():
    given = {"client_kwargs": {"headers": {"X-Other": "flag"}}}
    options = parse_mount_options(
        ["anon,endpoint_url=http://h:9,so.client_kwargs.headers.X-Other=fstab,so.use_ssl=false"]
    )
    merged, storage = mount_storage_options(options, given)
    assert storage == {
        "anon": True,
        "endpoint_url": "http://h:9",
        "use_ssl": False,
        "client_kwargs": {"headers": {"X-Other": "flag"}},
    }
    assert given == {"client_kwargs": {"headers": {"X-Other": "flag"}}}  # not changed
    # merged once: nothing of the storage options travels on in the mount options
    assert (merged.anon, merged.endpoint_url, merged.storage) == (False, None, ())
    assert not merged.follow_symlinks


@pytest.mark.parametrize(
    ("flags", "mount_options", "follows"),
    [
        ({}, [], False),
        ({}, ["follow_symlinks"], True),
        ({"follow_symlinks": True}, [], True),
        ({}, ["so.follow_symlinks=true"], True),
        ({"follow_symlinks": False}, ["so.follow_symlinks=true"], False),  # the flags win
    ],
)
def test_follow_symlinks_leaves_the_storage_options_for_the_engine(flags, mount_options, follows):
    """``follow_symlinks`` is the engine's argument, not fsspec's: whichever way it comes, it
    ends up in the mount options, never among the storage options fsspec gets."""
    merged, storage = mount_storage_options(parse_mount_options(mount_options), flags)
    assert merged.follow_symlinks is follows and "follow_symlinks" not in storage


def test_follow_symlinks_must_be_a_boolean():
    with pytest.raises(ValueError, match="follow_symlinks must be true or false"):
        mount_storage_options(parse_mount_options([]), {"follow_symlinks": "yes"})


@pytest.mark.parametrize(
    "items, message",
    [
        (["bad"], "-O expects key=value, got 'bad'"),
        (["=1"], "-O expects key=value, got '=1'"),
        (["a=1", "a.b=2"], "storage option 'a.b': 'a' is already set to 1"),
    ],
)
def test_malformed_options_are_usage_errors(items, message):
    with pytest.raises(StorageOptionError) as caught:
        storage_options(items)
    assert str(caught.value) == message
    assert isinstance(caught.value, UsageError) and isinstance(caught.value, ValueError)
