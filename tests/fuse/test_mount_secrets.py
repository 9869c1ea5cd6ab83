"""Secrets given on the command line never stay in a zarrfs process's command line: the mount's
daemon (a fork of ``zarrfs mount``) lives as long as the mount, and ``/proc/PID/cmdline`` is
readable by every user of the machine."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.fuse.conftest import zarrfs_command
from zarrfs.process_title import hidden

pytestmark = pytest.mark.fuse


def _command_lines() -> dict[int, bytes]:
    lines = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                lines[int(entry.name)] = (entry / "cmdline").read_bytes()
            except OSError:  # gone meanwhile, or not ours to read
                continue
    return lines


def test_hidden_replaces_every_value_that_may_be_a_secret():
    argv = ["zarrfs", "mount", "s3://b/x", "/mnt", "-O", "key=AKIA", "-Osecret=abc"]
    argv += ["-o", "ro,so.token=zz,prefetch=8M", "-oso.a=b", "https://u:pw@h/x?sig=1"]
    argv += [
        "-o",
        "out.tif",
        "--endpoint-url",
        "http://127.0.0.1:9000",
        "--endpoint-url=http://u:p@h",
    ]
    assert hidden(argv) == [
        "zarrfs",
        "mount",
        "s3://b/x",
        "/mnt",
        "-O",
        "key=***",
        "-Osecret=***",
        "-o",
        "ro,so.token=***,prefetch=8M",
        "-oso.a=***",
        "https://u:***@h/x?***",
        "-o",
        "out.tif",  # `zarrfs get -o FILE`: a file name, shown
        "--endpoint-url",
        "http://127.0.0.1:9000",
        "--endpoint-url=http://u:***@h",
    ]
    assert hidden(["zarrfs", "info", "/data/x.zarr"]) == ["zarrfs", "info", "/data/x.zarr"]


@pytest.mark.parametrize("how", ["-O", "-o so."])
def test_no_zarrfs_process_shows_the_secret_of_a_mount(
    mount, zarr_writer, s3_server, s3_store, how
):
    data = np.arange(24, dtype="<i4").reshape(4, 6)
    written = zarr_writer(data, chunks=(2, 3))
    url, options = s3_store(written.root)
    secret = "zarrfs-test-" + secrets.token_hex(12)  # moto takes any credentials
    key = "AKIA" + secrets.token_hex(8).upper()
    options = {**options, "key": key, "secret": secret}
    if how == "-O":
        mounted = mount(url, storage_options=options, daemon=True)
    else:  # an fstab line's way: -o so.KEY=VALUE
        given = {k: v for k, v in options.items() if k not in ("key", "secret")}
        mounted = mount(url, f"so.key={key},so.secret={secret}", storage_options=given, daemon=True)
    np.testing.assert_array_equal(np.load(mounted.path / "array" / "data.npy"), data)
    daemon = mounted.daemon_pid()
    lines = _command_lines()
    assert b"zarrfs" in lines[daemon]  # still known as zarrfs (`zarrfs unmount` checks it)
    assert b"***" in lines[daemon]
    showing = {pid: line for pid, line in lines.items() if secret.encode() in line}
    assert not showing, showing
    assert not [pid for pid, line in lines.items() if key.encode() in line]
    # the title is all that changed: the daemon's mount record still names the mount
    status = json.loads((mounted.path / ".zarrfs" / "mount.json").read_text())
    assert status["pid"] == daemon


def test_hide_secrets_rewrites_what_proc_shows(tmp_path, zarr_writer):
    """In a fresh interpreter given ``info URL -O secret=...``: after ``hide_secrets()`` (what
    ``zarrfs``'s main runs for every subcommand), ``/proc/PID/cmdline`` shows ``secret=***``.
    The child waits on a FIFO, so its title is read while it lives."""
    written = zarr_writer(np.arange(4, dtype="u1"))
    secret = "zarrfs-test-" + secrets.token_hex(12)
    fifo = tmp_path / "hold"
    os.mkfifo(fifo)
    code = (
        "import sys; from zarrfs.cli import build_parser; from zarrfs.process_title import "
        "hide_secrets; build_parser().parse_args(sys.argv[1:]); hide_secrets(); "
        f"open({str(fifo)!r}).read()"
    )
    argv = ["info", str(written.root), "-O", f"secret={secret}"]
    process = subprocess.Popen([*zarrfs_command()[:1], "-c", code, *argv])
    try:
        with open(fifo, "w"):  # opens once the child waits on the FIFO: its title is set
            line = Path(f"/proc/{process.pid}/cmdline").read_bytes()
    finally:
        process.wait(timeout=30)
    assert b"secret=***" in line and secret.encode() not in line


def test_the_viewer_mounts_with_secrets_out_of_every_command_line(s3_server, s3_store, zarr_writer):
    """The viewer's "Open as a file" mounts in a subprocess: its storage options go through
    the environment (readable by the owner only), never on that command line."""
    from viewer import open_as_file

    data = np.arange(24, dtype="<i4").reshape(4, 6)
    url, options = s3_store(zarr_writer(data, chunks=(2, 3)).root)
    secret = "zarrfs-test-" + secrets.token_hex(12)
    options = {**options, "secret": secret}
    commands: list[list[str]] = []
    run = subprocess.run

    def watched(command, **kwargs):  # the real subprocess.run, its command line noted
        commands.append(list(command))
        return run(command, **kwargs)

    mounts = open_as_file.Mounts()
    try:
        open_as_file.subprocess.run = watched
        point = mounts.mount(url, options)
        np.testing.assert_array_equal(np.load(point / "array" / "data.npy"), data)
        lines = _command_lines()
        assert not [pid for pid, line in lines.items() if secret.encode() in line]
    finally:
        open_as_file.subprocess.run = run
        mounts.unmount_all()
    assert commands and not [c for c in commands if any(secret in part for part in c)]


def test_options_handed_over_in_the_environment_must_be_an_object(tmp_path, zarr_writer):
    written = zarr_writer(np.arange(4, dtype="u1"))
    point = tmp_path / "mnt"
    point.mkdir()
    for text, words in (("[1]", "must hold a JSON object"), ("{bad", "is not JSON")):
        env = {**os.environ, "ZARRFS_MOUNT_STORAGE_OPTIONS": text}
        command = zarrfs_command("mount", str(written.root), str(point))
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
        assert result.returncode == 2 and words in result.stderr
