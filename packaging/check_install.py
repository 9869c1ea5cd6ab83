"""Build zarrfs as users get it, install it fresh, and run it from there (``packaging/test.sh``).

1. ``python -m build``: the sdist, then the wheel built from the sdist (so the sdist is checked
   too).
2. The wheel holds ``zarrfs/`` and its ``.dist-info`` and nothing else, and every module of
   ``zarrfs/`` and ``viewer/`` and every icon and style sheet of ``resources/``.
3. A new virtual environment (no system site-packages) gets ``pip install WHEEL[viewer,remote]``;
   from a folder outside the repository: ``zarrfs --version``, ``python -m zarrfs``, ``tree``,
   ``info``, ``get``, a mount read back against ``get`` and unmounted (where /dev/fuse is),
   ``zarrfs view --screenshot`` of the demo store with no "missing" warning, and the icons and
   theme loaded from site-packages.
4. ``pipx install WHEEL`` (pipx pip-installed into a throwaway environment) gives a ``zarrfs``
   that runs.

Everything happens in one temporary folder, removed at the end (a mount is unmounted first).
A script rather than a pytest test: it checks the built artifacts from outside the source tree,
once per full test run, and must not run where a developer runs part of the suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEMO = "resources/demo.zarr"

ICONS_OK = """
import importlib.util, sysconfig
from PySide6.QtWidgets import QApplication
from zarrfs.viewer import resources
app = QApplication([])
site = sysconfig.get_paths()["purelib"]
names = resources.icon_names()
assert names, "no icons in zarrfs.viewer.icons"
for name in names:
    path = resources.icon_path(name)
    assert str(path).startswith(site), f"icon {name} not from site-packages: {path}"
    assert not resources.icon(name).pixmap(32, 32).isNull(), f"icon {name} does not render"
assert "QWidget" in resources.style_sheet("dark"), "dark theme empty"
stray = [n for n in ("viewer", "resources") if importlib.util.find_spec(n)]
assert not stray, f"top-level packages besides zarrfs: {stray}"
print(len(names), "icons and the dark theme from", site)
"""


class CheckFailed(Exception):
    pass


def run(command, *, cwd, env=None, timeout=600) -> subprocess.CompletedProcess:
    """Run ``command``; a non-zero status fails the check with its output."""
    result = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode:
        raise CheckFailed(
            f"{' '.join(map(str, command))} exited {result.returncode}\n"
            f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )
    return result


def step(name: str, started: float) -> None:
    print(f"check_install: {name} ({time.monotonic() - started:.0f} s)", flush=True)


def build(repo: Path, out: Path) -> tuple[Path, Path]:
    run([sys.executable, "-m", "build", "--outdir", out, repo], cwd=out.parent)
    (sdist,), (wheel,) = out.glob("*.tar.gz"), out.glob("*.whl")
    return sdist, wheel


def expected_wheel_files(repo: Path) -> set[str]:
    """What the wheel must hold: the package's modules, the viewer's, the icons and themes."""
    sources = [
        ("zarrfs", "zarrfs", "*.py"),
        ("viewer", "zarrfs/viewer", "*.py"),
        ("resources/icons", "zarrfs/viewer/icons", "*.svg"),
        ("resources/style", "zarrfs/viewer/style", "*.qss"),
    ]
    expected = set()
    for folder, package, pattern in sources:
        for path in (repo / folder).rglob(pattern):
            if "__pycache__" not in path.parts:
                expected.add(f"{package}/{path.relative_to(repo / folder).as_posix()}")
    return expected


def check_wheel(wheel: Path, repo: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info/"
    outside = [n for n in names if not n.startswith(("zarrfs/", dist_info))]
    if outside:
        raise CheckFailed(f"{wheel.name} holds files outside zarrfs/: {outside[:10]}")
    missing = sorted(expected_wheel_files(repo) - set(names))
    if missing:
        raise CheckFailed(f"{wheel.name} lacks {missing[:10]} (pyproject.toml's packages?)")


def fresh_venv(path: Path, *packages: str) -> Path:
    """A new virtual environment (never --system-site-packages) with ``packages``."""
    run([sys.executable, "-m", "venv", path], cwd=path.parent)
    run([path / "bin/python", "-m", "pip", "install", "-q", *packages], cwd=path.parent)
    return path / "bin"


def smoke(bin_dir: Path, repo: Path, work: Path) -> None:
    """The commands a user runs, from ``work`` (outside the repository)."""
    zarrfs, python, demo = bin_dir / "zarrfs", bin_dir / "python", repo / DEMO
    version = run([zarrfs, "--version"], cwd=work).stdout.strip()
    if run([python, "-m", "zarrfs", "--version"], cwd=work).stdout.strip() != version:
        raise CheckFailed("python -m zarrfs --version differs from zarrfs --version")
    if "phantom  64 x 256 x 256 uint16" not in run([zarrfs, "tree", demo], cwd=work).stdout:
        raise CheckFailed("zarrfs tree: the demo store's phantom array is not listed")
    if "uint16" not in run([zarrfs, "info", demo / "volumes/phantom"], cwd=work).stdout:
        raise CheckFailed("zarrfs info: no dtype in the summary")
    run([zarrfs, "get", demo / "volumes/phantom", "[32]", "-o", work / "plane.npy"], cwd=work)
    if Path("/dev/fuse").exists() and shutil.which("fusermount3"):
        mount_and_read(zarrfs, python, demo, work)
    else:
        print("check_install: no /dev/fuse or fusermount3 here: mount not checked")
    screenshot(zarrfs, demo, work)
    offscreen = dict(os.environ, QT_QPA_PLATFORM="offscreen", QT_LOGGING_RULES="qt.qpa.*=false")
    print(run([python, "-c", ICONS_OK], cwd=work, env=offscreen).stdout.strip())


def mount_and_read(zarrfs: Path, python: Path, demo: Path, work: Path) -> None:
    """Mount the demo store, read a plane with numpy, compare it with ``get``'s, unmount."""
    mountpoint = work / "mnt"
    mountpoint.mkdir()
    env = dict(os.environ, FUSE_LIBRARY_NAME=os.environ.get("FUSE_LIBRARY_NAME", "fuse3"))
    run([zarrfs, "mount", demo, mountpoint], cwd=work, env=env, timeout=120)
    try:
        planes = sorted(p.name for p in (mountpoint / "volumes/phantom/planes").glob("*.npy"))
        compare = (
            "import numpy, sys; a, b = numpy.load(sys.argv[1]), numpy.load(sys.argv[2]); "
            "sys.exit(0 if a.shape == (256, 256) and (a == b).all() else 'plane differs')"
        )
        plane = mountpoint / "volumes/phantom/planes" / planes[32]
        run([python, "-c", compare, plane, work / "plane.npy"], cwd=work)
    finally:
        unmounted = subprocess.run(
            [str(zarrfs), "unmount", str(mountpoint)], cwd=work, env=env, capture_output=True
        )
        if unmounted.returncode:
            subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], capture_output=True)
    if unmounted.returncode or os.path.ismount(mountpoint):
        raise CheckFailed(f"zarrfs unmount failed: {unmounted.stderr.decode(errors='replace')}")


def screenshot(zarrfs: Path, demo: Path, work: Path) -> None:
    env = dict(
        os.environ,
        QT_QPA_PLATFORM="offscreen",
        QT_LOGGING_RULES="qt.qpa.*=false",
        XDG_CONFIG_HOME=str(work / "config"),
    )
    shot = work / "viewer.png"
    command = [zarrfs, "view", demo, "--node", "images/cells", "--screenshot", shot]
    result = run(command, cwd=work, env=env, timeout=180)
    if "missing" in result.stderr.lower():
        raise CheckFailed(f"zarrfs view warned of missing files:\n{result.stderr}")
    if not shot.is_file() or shot.stat().st_size == 0:
        raise CheckFailed("zarrfs view --screenshot wrote no image")


def check_pipx(wheel: Path, work: Path) -> None:
    """``pipx install WHEEL`` into a pipx home under ``work``; its ``zarrfs`` runs."""
    pipx = fresh_venv(work / "pipx-tool", "pipx") / "pipx"
    home = work / "pipx"
    env = dict(
        os.environ,
        PIPX_HOME=str(home),
        PIPX_BIN_DIR=str(home / "bin"),
        PIPX_MAN_DIR=str(home / "man"),
    )
    env.pop("PIPX_DEFAULT_PYTHON", None)
    run([pipx, "install", wheel], cwd=work, env=env)
    zarrfs = home / "bin" / "zarrfs"
    run([zarrfs, "--version"], cwd=work)
    if "phantom" not in run([zarrfs, "tree", REPO / DEMO], cwd=work).stdout:
        raise CheckFailed("zarrfs installed by pipx: tree lists no phantom")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="the source tree to build")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="zarrfs-install-") as tmp:
        work = Path(tmp)
        try:
            sdist, wheel = build(repo, work / "dist")
            check_wheel(wheel, repo)
            step(f"built {sdist.name} and {wheel.name}: only zarrfs/ inside", started)
            bin_dir = fresh_venv(work / "venv", f"{wheel}[viewer,remote]")
            step("installed the wheel into a fresh venv", started)
            smoke(bin_dir, repo, work)
            step("--version, tree, info, get, mount, view --screenshot: ok", started)
            check_pipx(wheel, work)
            step("pipx install of the wheel: ok", started)
        except (CheckFailed, subprocess.TimeoutExpired) as exc:
            print(f"check_install: FAILED: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
