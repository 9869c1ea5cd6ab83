""" "Open as a file": the plane on screen as its ``.tif`` under a zarrfs mount of the same store,
for Fiji, GIMP or any program (the viewer's and the mount's doors meet here).

An existing zarrfs mount of the store is found through the mount table and its
``.zarrfs/mount.json``; else one is made on request, read-only, in a temporary folder, and
unmounted when the viewer exits (with ``-o composite``). The plane's file is found by listing
the mounted folder (the i-th entry of each plane level is index i; ``composite`` where a
composite is on screen), so the mount alone knows its naming scheme. The mount's planes run
over the last two axes: other displayed axes have no plane file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

FS_TYPE = "fuse.zarrfs"
COMPOSITE = "composite"  # the mount's composite entry (-o composite)
MOUNT_TIMEOUT = 60.0


def normalized(url: str) -> str:
    """Local paths as absolute paths, as the mount records its URL."""
    if "://" in url or "::" in url:
        return url.rstrip("/")
    return os.path.abspath(os.path.expanduser(url))


def find_mounts(url: str, table: str = "/proc/self/mounts") -> list[Path]:
    """The zarrfs mounts of ``url`` (their roots), in the order of the mount table."""
    try:
        lines = Path(table).read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        if len(fields) < 3 or fields[2] != FS_TYPE:
            continue
        point = Path(fields[1].replace("\\040", " "))
        try:
            document = json.loads((point / ".zarrfs" / "mount.json").read_text())
        except (OSError, ValueError):
            continue
        if normalized(str(document.get("url", ""))) == normalized(url):
            found.append(point)
    return found


def plane_file(root: Path, node_path: str, indices: tuple[int | None, ...]) -> Path:
    """The ``.tif`` of the plane at ``indices`` (one per axis before the last two; ``None`` at
    the channel axis: the composite) of the array ``node_path`` under the mount ``root``.
    FileNotFoundError when the mount offers none."""
    node = root.joinpath(*[p for p in node_path.split("/") if p])
    if not indices:
        return node / "data.tif"
    folder = node / "planes"
    for depth, index in enumerate(indices):
        last = depth == len(indices) - 1
        names = sorted(os.listdir(folder))
        if index is None:
            name = COMPOSITE + (".tif" if last else "")
            if name not in names:
                raise FileNotFoundError(f"{folder}: no {name} (a mount with -o composite has)")
            folder = folder / name
            continue
        if last:
            entries = [n for n in names if n.endswith(".tif") and not n.startswith("composite")]
        else:
            entries = [n for n in names if n != "composite"]
        if index >= len(entries):
            raise FileNotFoundError(f"{folder}: no plane file for index {index}")
        folder = folder / entries[index]
    return folder


class Mounts:
    """The mounts this viewer made: made on request, unmounted by :meth:`unmount_all`."""

    def __init__(self) -> None:
        self.made: list[Path] = []

    def mount(self, url: str, storage_options: dict) -> Path:
        """Mount ``url`` read-only in a new temporary folder (blocks until live: background)."""
        point = Path(tempfile.mkdtemp(prefix="zarrfs-view-"))
        command = [sys.executable, "-m", "zarrfs.cli", "mount", url, str(point), "-o", COMPOSITE]
        # storage options (credentials) never on a command line, which `ps` shows to every
        # user: in the environment the mount reads them from (zarrfs/fuse/cli.py)
        env = {**os.environ, "ZARRFS_MOUNT_STORAGE_OPTIONS": json.dumps(storage_options)}
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=MOUNT_TIMEOUT, env=env
        )
        if result.returncode != 0:
            point.rmdir()
            raise OSError(f"cannot mount {url}: {result.stderr.strip() or result.returncode}")
        self.made.append(point)
        return point

    def unmount_all(self) -> subprocess.Popen | None:
        """Unmount every mount made, in a process of its own that outlives the viewer: each
        ``zarrfs unmount`` may take up to ``MOUNT_TIMEOUT`` seconds, which the closing window
        (the GUI thread) never waits for. Returns that process (None: nothing to unmount)."""
        made, self.made = self.made, []
        if not made:
            return None
        return subprocess.Popen(
            [sys.executable, "-m", "zarrfs.viewer.open_as_file", *map(str, made)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not ended with the viewer's terminal or process group
        )


def unmount(points) -> None:
    """Unmount and remove each of the temporary mount folders ``points`` (blocking)."""
    for point in points:
        subprocess.run(
            [sys.executable, "-m", "zarrfs.cli", "unmount", str(point)],
            capture_output=True,
            timeout=MOUNT_TIMEOUT,
            check=False,
        )
        try:
            Path(point).rmdir()
        except OSError:
            pass


def locate(url: str, storage_options: dict, node_path: str, indices, mounts: Mounts | None):
    """The plane's file: under an existing mount, else (``mounts`` given) a new one. Runs in a
    worker (listing a mount, mounting)."""
    roots = find_mounts(url)
    for root in roots:
        try:
            return plane_file(root, node_path, tuple(indices))
        except FileNotFoundError:
            if None not in indices:
                raise
            # a composite, which this mount does not offer: another mount may
    if mounts is None:
        composite = " with -o composite" if roots else ""
        raise FileNotFoundError(f"no zarrfs mount of {url}{composite}")
    return plane_file(mounts.mount(url, storage_options), node_path, tuple(indices))


if __name__ == "__main__":  # Mounts.unmount_all's own process
    unmount(sys.argv[1:])
