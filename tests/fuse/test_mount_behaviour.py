"""A real mount's behaviour: ranges at chunk boundaries, concurrent readers, EIO on a network fault
and recovery, EROFS for writes, ENOENT for missing names, daemon mode, unmount after kill -9."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import tifffile

from tests.fuse.conftest import needs_fuse, zarrfs_command
from zarrfs.fuse.daemon import is_mounted
from zarrfs.fuse.npy import npy_header

pytestmark = [needs_fuse, pytest.mark.fuse]


@pytest.fixture
def store(zarr_writer):
    """A 3-D int32 array (chunks not aligned to planes) and a 2-D float32 array, by zarr-python."""
    rng = np.random.default_rng(7)
    cube = rng.integers(-1000, 1000, size=(4, 33, 47), dtype=np.int32)
    image = rng.normal(size=(65, 70)).astype(np.float32)
    written = zarr_writer(cube, path="cube", chunks=(3, 10, 16), dimension_names=("z", "y", "x"))
    zarr_writer(image, path="image", chunks=(16, 16), root=written.root)
    return written.root, {"cube": cube, "image": image}


def test_ranges_at_chunk_boundaries(store, mount):
    root, data = store
    mounted = mount(root)
    cube = data["cube"]
    raw = cube.tobytes()
    header = len(npy_header(cube.dtype, cube.shape))
    path = mounted.path / "cube" / "data.npy"
    assert path.stat().st_size == header + len(raw)
    itemsize = cube.itemsize
    # element offsets at chunk edges along x (16), y rows (47 per row) and z slabs (33*47)
    edges = [0, 15, 16, 17, 47 * 10 - 1, 47 * 10, 33 * 47 * 3 - 1, 33 * 47 * 3, cube.size - 1]
    with open(path, "rb") as file:
        for element in edges:
            for shift in (-3, 0, 1):
                offset = max(0, header + element * itemsize + shift)
                file.seek(offset)
                got = file.read(37)
                want = (npy_header(cube.dtype, cube.shape) + raw)[offset : offset + 37]
                assert got == want, (element, shift)


def test_planes_names_and_values(store, mount):
    root, data = store
    mounted = mount(root)
    planes = mounted.path / "cube" / "planes"
    assert sorted(os.listdir(planes)) == sorted(
        f"z_{i}.{ext}" for i in range(4) for ext in ("npy", "tif")
    )
    np.testing.assert_array_equal(np.load(planes / "z_2.npy"), data["cube"][2])
    np.testing.assert_array_equal(tifffile.imread(planes / "z_3.tif"), data["cube"][3])
    np.testing.assert_array_equal(
        tifffile.imread(mounted.path / "image" / "data.tif"), data["image"]
    )
    with pytest.raises(FileNotFoundError):
        (planes / "z_4.npy").stat()  # out of range
    with pytest.raises(FileNotFoundError):
        (planes / "z_02.npy").stat()  # wrong width


def test_concurrent_readers(store, mount):
    root, data = store
    mounted = mount(root)
    paths = [mounted.path / "cube" / "data.raw", mounted.path / "image" / "data.raw"]
    expected = [data["cube"].tobytes(), data["image"].tobytes()]

    def read(index: int) -> bool:
        which = index % 2
        with open(paths[which], "rb") as file:
            file.seek((index * 997) % 4096)
            start = file.tell()
            return file.read() == expected[which][start:]

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(read, range(32)))


def test_writes_are_erofs_and_missing_is_enoent(store, mount):
    root, _ = store
    mounted = mount(root)
    attempts = [
        lambda: open(mounted.path / "cube" / "data.npy", "r+b"),
        lambda: open(mounted.path / "new.txt", "wb"),
        lambda: os.mkdir(mounted.path / "newdir"),
        lambda: os.unlink(mounted.path / "cube" / "attrs.json"),
        lambda: os.rename(mounted.path / "cube", mounted.path / "cube2"),
        lambda: os.chmod(mounted.path / "cube" / "info.txt", 0o777),
    ]
    for attempt in attempts:
        with pytest.raises(OSError) as caught:
            attempt()
        assert caught.value.errno == errno.EROFS
    with pytest.raises(FileNotFoundError):
        os.stat(mounted.path / "nothing")
    with pytest.raises(FileNotFoundError):
        os.stat(mounted.path / ".zarray")  # never looks like a Zarr store


def test_node_documents(store, mount):
    root, _ = store
    mounted = mount(root)
    cube = mounted.path / "cube"
    meta = json.loads((cube / "meta.json").read_text())
    assert meta["zarr.json"]["shape"] == [4, 33, 47]
    assert json.loads((cube / "attrs.json").read_text()) == {}
    assert "cube" in (cube / "info.txt").read_text()
    stats = json.loads((mounted.path / ".zarrfs" / "stats.json").read_text())
    assert {"mount", "engine"} <= set(stats)


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("array", ["image", "sharded"])
def test_a_signal_does_not_wait_for_a_stalled_store(
    store, mount, http_server, zarr_writer, number, array
):
    """The store stops answering (30 s per request) while a program reads: the signal ends
    the reads under way (EIO) and the mount at once, instead of after the store's answer.
    Sharded too, where the reads of the file's first windows wait for shard indexes."""
    root, data = store
    volume = np.arange(16 * 256 * 256, dtype=np.uint16).reshape(16, 256, 256)
    # 2 MiB shards: a read of the file's first pages wants part of one, so its index first
    zarr_writer(volume, path="sharded", chunks=(4, 32, 32), shards=(16, 64, 64), root=root)
    server = http_server(root)
    mounted = mount(server.url_for(""))
    assert (mounted.path / array / "data.npy").stat().st_size > 0
    server.latency = 30.0
    outcome: dict[str, object] = {}

    def read() -> None:
        try:
            outcome["bytes"] = (mounted.path / array / "data.npy").read_bytes()
        except OSError as error:
            outcome["error"] = error.errno

    reader = threading.Thread(target=read)
    reader.start()
    try:
        deadline = time.monotonic() + 10
        while not server.stats.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.stats.in_flight, "the read never reached the store"
        mounted.process.send_signal(number)
        assert mounted.process.wait(timeout=15) == 0  # far less than the store's 30 s
        reader.join(timeout=15)
        assert not reader.is_alive()
        assert outcome.get("error") == errno.EIO, outcome  # never bytes the store did not send
        assert not is_mounted(str(mounted.path))
    finally:
        server.latency = 0.0


def test_network_fault_gives_eio_then_recovers(store, mount, http_server):
    root, data = store
    server = http_server(root)
    mounted = mount(server.url_for(""))
    path = mounted.path / "image" / "data.raw"
    server.faults.status(500, pattern=r"image/c/")
    with pytest.raises(OSError) as caught:
        with open(path, "rb") as file:
            file.read(4096)
    assert caught.value.errno == errno.EIO
    server.faults.clear()
    with open(path, "rb") as file:
        assert file.read() == data["image"].tobytes()
    log = (mounted.path / ".zarrfs" / "log").read_text()
    assert "image" in log and "EIO" in log


def test_daemon_mount_then_kill9_then_unmount(store, mount):
    root, data = store
    mounted = mount(root, daemon=True)
    np.testing.assert_array_equal(np.load(mounted.path / "image" / "data.npy"), data["image"])
    pid = mounted.daemon_pid()
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    assert is_mounted(str(mounted.path))  # stale: still in the mount table
    result = subprocess.run(
        zarrfs_command("unmount", str(mounted.path)), capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    assert not is_mounted(str(mounted.path))


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs")
def test_unmount_leaves_other_file_systems_alone(tmp_path):
    """As root, ``fusermount3 -u`` unmounts anything: ``zarrfs unmount`` first checks that the
    mount is one of ours."""
    target = tmp_path / "tmpfs"
    target.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(target)], check=True)
    try:
        result = subprocess.run(
            zarrfs_command("unmount", str(target)), capture_output=True, text=True, timeout=30
        )
        assert result.returncode == 1
        assert "is not a zarrfs mount (it is tmpfs)" in result.stderr
        assert is_mounted(str(target))
    finally:
        subprocess.run(["umount", str(target)], check=False)


def the_zarrfs_command(*args: str) -> list[str]:
    """``zarrfs ...`` as users run it: the main command line, with its own logging set up."""
    return [
        sys.executable,
        "-c",
        "import sys; from zarrfs.cli import main; sys.exit(main())",
        *args,
    ]


def test_the_daemon_logs_each_line_once_and_errors_in_one_line(store, tmp_path):
    root, data = store
    target, log_file = tmp_path / "mnt", tmp_path / "daemon.log"
    target.mkdir()
    result = subprocess.run(
        the_zarrfs_command("mount", str(tmp_path / "missing.zarr"), str(target)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"zarrfs mount: cannot open {tmp_path / 'missing.zarr'}: no Zarr group or array at "
        f"{tmp_path / 'missing.zarr'}"
    ]
    subprocess.run(
        the_zarrfs_command("mount", str(root), str(target), "--log-file", str(log_file)),
        check=True,
        timeout=60,
    )
    try:
        assert np.array_equal(np.load(target / "image" / "data.npy"), data["image"])
    finally:
        subprocess.run(the_zarrfs_command("unmount", str(target)), check=True, timeout=60)
    deadline = time.monotonic() + 10
    while "unmounted" not in log_file.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = [line.split(" INFO ", 1)[-1] for line in log_file.read_text().splitlines()]
    assert "zarrfs.fuse.operations: unmounted" in lines
    assert len(lines) == len(set(lines)), lines  # the command line's stderr handler is gone


def test_a_failing_chunk_is_logged_once(store, mount):
    """One line naming the array and the chunk key, however often the kernel and the reader
    ask again for the pages of a chunk that cannot be decoded."""
    root, _ = store
    chunk = Path(root) / "image" / "c" / "1" / "2"
    chunk.write_bytes(b"not zstd" * 10)
    mounted = mount(root)
    for _ in range(3):
        with pytest.raises(OSError) as caught:
            (mounted.path / "image" / "data.raw").read_bytes()
        assert caught.value.errno == errno.EIO
    lines = [
        line
        for line in (mounted.path / ".zarrfs" / "log").read_text().splitlines()
        if "c/1/2" in line
    ]
    assert len(lines) == 1, lines
    assert "image" in lines[0] and "EIO" in lines[0]


def test_mount_error_reaches_the_caller(tmp_path):
    target = tmp_path / "mnt"
    target.mkdir()
    result = subprocess.run(
        zarrfs_command("mount", str(tmp_path / "missing.zarr"), str(target)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "missing.zarr" in result.stderr
    assert not is_mounted(str(target))


@pytest.mark.parametrize("foreground", [False, True], ids=["daemon", "foreground"])
def test_a_log_file_that_cannot_be_written_is_reported(store, tmp_path, foreground):
    target = tmp_path / "mnt"
    target.mkdir()
    log_file = tmp_path / "no-such-dir" / "mount.log"
    result = subprocess.run(
        zarrfs_command(
            "mount",
            str(store[0]),
            str(target),
            "--log-file",
            str(log_file),
            *(["--foreground"] if foreground else []),
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"zarrfs mount: cannot write the log file {log_file}: No such file or directory"
    ]
    assert not is_mounted(str(target))


@pytest.mark.parametrize(
    "number", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["SIGTERM", "SIGINT", "SIGHUP"]
)
@pytest.mark.parametrize("push", ["yes", "no"])
def test_a_signal_unmounts_cleanly(store, mount, number, push):
    root, data = store
    mounted = mount(root, f"push_pages={push}")
    assert np.array_equal(np.load(mounted.path / "cube" / "data.npy"), data["cube"])
    mounted.process.send_signal(number)
    assert mounted.process.wait(timeout=20) == 0
    assert not is_mounted(str(mounted.path))


def _sigint_as_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def signal_while_opening(tmp_path, http_server, number, *flags) -> tuple[str, subprocess.Popen]:
    """``zarrfs mount *flags`` of a store that answers after 4 s, at ``tmp_path / "mnt"``;
    ``number`` sent once the mount has asked the store. Its stderr, and the ended process."""
    (tmp_path / "slow.zarr").mkdir()
    (tmp_path / "slow.zarr" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    server = http_server(tmp_path, latency=4.0)
    (tmp_path / "mnt").mkdir()
    process = subprocess.Popen(
        zarrfs_command("mount", *flags, f"{server.url}/slow.zarr", str(tmp_path / "mnt")),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # SIGINT as a terminal delivers it: a test run started in the background by a
        # non-interactive shell ignores SIGINT, and a child would inherit that (the mount
        # then never saw the signal and mounted: the test's failures in such runs)
        preexec_fn=_sigint_as_default,
    )
    try:
        deadline = time.monotonic() + 30
        while not server.stats.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.stats.in_flight, "the mount never asked the store"
        process.send_signal(number)
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    return stderr, process


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_the_store_opens_stops_before_mounting(tmp_path, http_server, number):
    """The store answers slowly: the signal ends the opening, and nothing is mounted."""
    target = tmp_path / "mnt"
    stderr, process = signal_while_opening(tmp_path, http_server, number, "--foreground")
    assert process.returncode == 128 + number
    assert f"{signal.Signals(number).name} while mounting" in stderr
    assert not is_mounted(str(target))


def test_ctrl_c_while_the_daemon_opens_the_store_leaves_nothing_mounted(tmp_path, http_server):
    """Ctrl-C on ``zarrfs mount`` (daemonizing) while the store answers slowly: the daemon
    stops too, and no mount appears later."""
    target, log_file = tmp_path / "mnt", tmp_path / "daemon.log"
    try:
        stderr, process = signal_while_opening(
            tmp_path, http_server, signal.SIGINT, "--log-file", str(log_file)
        )
        assert process.returncode == 130
        assert "interrupted; not mounted" in stderr
        assert "SIGTERM while mounting" in log_file.read_text()
        time.sleep(5)  # past the store's answer: the daemon would have mounted by now
        assert not is_mounted(str(target)), log_file.read_text()
    finally:  # a failure leaves no mount behind
        if is_mounted(str(target)):
            subprocess.run(["fusermount3", "-uz", str(target)], check=False)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie of ours counts as dead
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except OSError:
        return False


def test_fstab_helper_mounts_with_mount8_options(store, tmp_path):
    """``mount.zarrfs URL DIR -o ro,noauto,... -t fuse.zarrfs``, as mount(8) calls it."""
    root, data = store
    wrapper = tmp_path / "zarrfs"
    wrapper.write_text(f'#!/bin/sh\nexec {" ".join(zarrfs_command())} "$@"\n')
    wrapper.chmod(0o755)
    target = tmp_path / "fstab-mnt"
    target.mkdir()
    helper = Path(__file__).resolve().parents[2] / "packaging" / "mount.zarrfs"
    options = "ro,noauto,user,_netdev,nofail,x-systemd.automount,ttl=60"
    result = subprocess.run(
        [str(helper), str(root), str(target), "-o", options, "-t", "fuse.zarrfs"],
        env={**os.environ, "ZARRFS": str(wrapper)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    try:
        assert result.returncode == 0, result.stderr
        assert is_mounted(str(target))
        np.testing.assert_array_equal(np.load(target / "image" / "data.npy"), data["image"])
        mount_json = json.loads((target / ".zarrfs" / "mount.json").read_text())
        assert mount_json["options"]["ttl"] == 60.0
    finally:
        subprocess.run(["fusermount3", "-u", str(target)], capture_output=True, check=False)
        subprocess.run(["fusermount3", "-uz", str(target)], capture_output=True, check=False)


@pytest.mark.skipif(
    os.geteuid() != 0 or os.path.lexists("/sbin/mount.fuse.zarrfs"),
    reason="installs /sbin/mount.fuse.zarrfs for the test: root, and not there yet",
)
def test_an_fstab_line_mounts_through_mount8(store, tmp_path):
    """An fstab line of type ``fuse.zarrfs``, mounted by mount(8) itself: it runs
    ``/sbin/mount.fuse.zarrfs`` (the helper, installed as the README says) with the line's
    options. mount(8) is given the line with ``-T``, so /etc/fstab is not touched."""
    root, data = store
    wrapper = tmp_path / "zarrfs"
    wrapper.write_text(f'#!/bin/sh\nexec {" ".join(zarrfs_command())} "$@"\n')
    wrapper.chmod(0o755)
    helper = Path(__file__).resolve().parents[2] / "packaging" / "mount.zarrfs"
    target = tmp_path / "fstab mnt"  # a space, written \040 in fstab
    target.mkdir()
    fstab = tmp_path / "fstab"
    where = str(target).replace(" ", "\\040")
    fstab.write_text(
        f"{root}  {where}  fuse.zarrfs  ro,noauto,nofail,x-systemd.automount,ttl=60,csv  0 0\n"
    )
    installed = Path("/sbin/mount.fuse.zarrfs")
    installed.write_text(f'#!/bin/sh\nZARRFS="{wrapper}" exec "{helper}" "$@"\n')
    installed.chmod(0o755)
    try:
        result = subprocess.run(
            ["mount", "-T", str(fstab), str(target)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
        assert result.returncode == 0, result.stderr
        assert is_mounted(str(target))
        np.testing.assert_array_equal(np.load(target / "image" / "data.npy"), data["image"])
        options = json.loads((target / ".zarrfs" / "mount.json").read_text())["options"]
        assert options["ttl"] == 60.0 and options["csv"] is True
    finally:
        installed.unlink()
        subprocess.run(["fusermount3", "-u", str(target)], capture_output=True, check=False)
        subprocess.run(["fusermount3", "-uz", str(target)], capture_output=True, check=False)


def test_ttl_shows_changed_chunks(mount, zarr_writer):
    """With -o ttl the store is not a snapshot: after the TTL, changed chunks read new values
    (decoded copies in the engine's cache are dropped with the tree)."""
    import time

    import zarr

    data = np.arange(100, dtype="i4").reshape(10, 10)
    w = zarr_writer(data, chunks=(5, 5))
    mounted = mount(str(w.root), "ttl=1")
    path = mounted.path / "array" / "data.npy"
    np.testing.assert_array_equal(np.load(path), data)
    zarr.open_array(str(w.location), mode="r+")[...] = data * 3
    time.sleep(1.5)  # past the TTL (a wait on the store's clock, not a timing assertion)
    np.testing.assert_array_equal(np.load(path), data * 3)


def test_listings_carry_attributes(mount, zarr_writer):
    """``ls -l`` of a directory is one listing: the entries come with their attributes
    (READDIRPLUS), so the daemon resolves a path per listing page, not per entry. A directory
    too long for one reply (1,200 plane files) is listed whole, in order, without repeats."""
    cube = np.arange(600 * 2 * 3, dtype=np.uint16).reshape(600, 2, 3)
    root = zarr_writer(cube, path="cube", chunks=(100, 2, 3)).root
    mounted = mount(root)
    planes = mounted.path / "cube" / "planes"
    stats = mounted.path / ".zarrfs" / "stats.json"
    before = json.loads(stats.read_text())["mount"]["lookups"]
    with os.scandir(planes) as listing:
        entries = [(e.name, e.stat().st_size) for e in listing]
    after = json.loads(stats.read_text())["mount"]["lookups"]
    names = [f"dim0_{i:03d}.{ext}" for i in range(600) for ext in ("npy", "tif")]
    assert [name for name, _ in entries] == names
    npy = len(npy_header(cube.dtype, (2, 3))) + 2 * 3 * 2
    assert all(size == npy for name, size in entries if name.endswith(".npy"))
    assert all(size > 2 * 3 * 2 for name, size in entries if name.endswith(".tif"))
    assert after - before < 200  # one per listing page; an entry-by-entry lookup is 1,200+
    np.testing.assert_array_equal(np.load(planes / "dim0_599.npy"), cube[599])


@pytest.mark.parametrize("consolidated", [False, True], ids=["listed", "consolidated"])
@pytest.mark.parametrize("breakage", ["unknown codec", "malformed JSON", "unknown data type"])
def test_a_broken_child_fails_alone(mount, zarr_writer, breakage, consolidated):
    """A child whose metadata cannot be used keeps its ``meta.json`` and ``info.txt`` (which
    says why); its ``attrs.json`` answers EIO; an array whose codec cannot be built keeps its data files
    too, whose reads answer EIO with one log line; its group, its siblings and the control
    folder list and read as usual."""
    good = np.arange(12, dtype=np.uint8).reshape(3, 4)
    root = zarr_writer(good, path="good", chunks=(2, 2)).root
    zarr_writer(good, path="sub/bad", chunks=(2, 2), root=root, attributes={"units": "m"})
    zarr_writer(good * 2, path="sub/fine", chunks=(2, 2), root=root, consolidate=consolidated)
    meta_path = Path(root) / "sub" / "bad" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    if breakage == "unknown codec":
        meta["codecs"].append({"name": "frobnicate"})
    elif breakage == "unknown data type":
        meta["data_type"] = "uint7"
    if consolidated and breakage != "malformed JSON":  # consolidated metadata says the same
        top = json.loads((Path(root) / "zarr.json").read_text())
        top["consolidated_metadata"]["metadata"]["sub/bad"] = meta
        (Path(root) / "zarr.json").write_text(json.dumps(top))
    meta_path.write_text(json.dumps(meta) if breakage != "malformed JSON" else "{not json")
    mounted = mount(root)
    assert sorted(os.listdir(mounted.path / "sub")) == [
        "attrs.json",
        "bad",
        "fine",
        "info.txt",
        "meta.json",
    ]
    bad = mounted.path / "sub" / "bad"
    if consolidated and breakage == "malformed JSON":  # consolidated metadata answers for it
        np.testing.assert_array_equal(np.load(bad / "data.npy"), good)
        return
    files = ["attrs.json", "data.npy", "data.raw", "data.tif", "info.txt", "meta.json"]
    assert sorted(os.listdir(bad)) == (
        files if breakage == "unknown codec" else ["attrs.json", "info.txt", "meta.json"]
    )
    info = (bad / "info.txt").read_text()
    reason = {"unknown codec": "frobnicate", "unknown data type": "uint7"}.get(breakage, "JSON")
    assert "error" in info and reason in info
    if breakage == "unknown codec":
        assert json.loads((bad / "attrs.json").read_text()) == {"units": "m"}
    else:  # a broken node's attributes are its error, never an empty {}
        with pytest.raises(OSError) as caught:
            (bad / "attrs.json").read_bytes()
        assert caught.value.errno == errno.EIO
    assert json.loads((bad / "meta.json").read_text())["zarr.json"]
    if breakage == "unknown codec":
        for _ in range(2):
            with pytest.raises(OSError) as caught:
                (bad / "data.npy").read_bytes()
            assert caught.value.errno == errno.EIO
        log = (mounted.path / ".zarrfs" / "log").read_text()
        assert len([line for line in log.splitlines() if "frobnicate" in line]) == 1
    np.testing.assert_array_equal(np.load(mounted.path / "sub" / "fine" / "data.npy"), good * 2)
    np.testing.assert_array_equal(np.load(mounted.path / "good" / "data.npy"), good)
    assert "sub/bad" in (mounted.path / ".zarrfs" / "log").read_text()


def test_storage_options_in_mount_options_nest_and_keep_their_spelling(store, mount, http_server):
    """``-o so.client_kwargs.headers.X-Probe=abc`` is ``-O client_kwargs.headers.X-Probe=abc``:
    dotted keys nest (an fstab line has no other way to say a nested option: commas split
    options), and the key keeps its ``-``. The command line's ``-O`` wins where both say."""
    root, data = store
    server = http_server(root)
    mounted = mount(
        server.url_for(""),
        "so.client_kwargs.headers.X-Probe=abc",
        "so.client_kwargs.headers.X-Other=fstab",
        storage_options={"client_kwargs.headers.X-Other": "flag"},
    )
    np.testing.assert_array_equal(np.load(mounted.path / "image" / "data.npy"), data["image"])
    chunk_reads = server.stats.records(r"image/c/")
    assert chunk_reads
    for record in chunk_reads:
        headers = {k.lower(): v for k, v in record.headers}  # (HTTP names know no case)
        assert headers.get("x-probe") == "abc" and headers.get("x-other") == "flag", headers


def test_csv_and_png_previews(mount, zarr_writer):
    """``-o csv,png``: text with a lone carriage return stays one cell (text is quoted, as
    ``zarrfs get`` writes it); previews keep 64-bit integer levels apart and scale a float
    range wider than float64 can hold."""
    import csv
    import io

    from PIL import Image

    words = np.array(["one", "car\rret", 'q"uote, comma', "line\nbreak"], dtype=object)
    root = zarr_writer(words.astype(np.dtypes.StringDType()), path="words", chunks=(2,)).root
    ramp = (np.arange(16, dtype=np.int64) + 2**62).reshape(2, 8)
    zarr_writer(ramp, path="ramp", chunks=(2, 4), root=root)
    extremes = np.array([[-1.7e308, 1.7e308]] * 2)
    zarr_writer(extremes, path="wide", chunks=(2, 2), root=root)
    mounted = mount(root, "csv,png")
    with open(mounted.path / "words" / "data.csv", newline="", encoding="utf-8") as file:
        assert list(csv.reader(file)) == [[word] for word in words]

    def preview(name: str) -> np.ndarray:
        return np.asarray(Image.open(io.BytesIO((mounted.path / name / "data.png").read_bytes())))

    levels = preview("ramp")
    assert levels.shape == (2, 8) and levels[0, 0] == 0 and levels[1, 7] == 255
    assert np.all(np.diff(levels.ravel().astype(int)) > 0)  # 16 values, 16 grey levels
    np.testing.assert_array_equal(preview("wide"), [[0, 255], [0, 255]])


def test_plane_names_take_ascii_digits_only(store, mount):
    """``z_²`` and ``z_١`` (Arabic-Indic one) are not plane names: ENOENT, not EIO or plane 1."""
    root, _ = store
    mounted = mount(root)
    planes = mounted.path / "cube" / "planes"
    for name in ("z_\u00b2.npy", "z_\u0661.npy", "z_\u0661.tif", "z_\uff11.npy"):
        with pytest.raises(FileNotFoundError):
            os.stat(planes / name)
    assert (planes / "z_1.npy").stat().st_size > 0
