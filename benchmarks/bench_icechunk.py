"""How fast the mount lists ``@snapshots/`` of an Icechunk repository with many commits (the
planes of a repository beside a plain copy are bench_engine's ``icechunk-*`` cases).

Run from the repository root::

    .venv/bin/python benchmarks/bench_icechunk.py            # 1,000 commits
    .venv/bin/python benchmarks/bench_icechunk.py --quick    # 200 commits

A repository of N commits on ``main`` (one chunk changed each), written once under
``benchmarks/_data/icechunk`` (git-ignored, reused); the mount's virtual tree (no FUSE) over it;
the time to list ``@snapshots/`` from a fresh open (reading the history), and again. The
target (issue 31): under 1 s for 1,000 commits.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DATA = Path(__file__).resolve().parent / "_data" / "icechunk"


def build_history(commits: int) -> Path:
    import icechunk
    import zarr

    repo_path = DATA / f"history{commits}"
    if repo_path.exists():
        return repo_path
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(repo_path)))
    session = repo.writable_session("main")
    zarr.create_array(session.store, name="a", shape=(64,), chunks=(1,), dtype="int32")
    session.commit("create")
    for i in range(commits - 1):
        session = repo.writable_session("main")
        zarr.open_array(session.store, path="a")[i % 64] = i
        session.commit(f"commit {i}")
    return repo_path


def time_snapshot_listing(repo_path: Path) -> tuple[float, int]:
    import zarrfs.engine as engine
    from zarrfs.fuse.options import parse_mount_options
    from zarrfs.fuse.tree import VirtualTree

    tree = VirtualTree(lambda: engine.open(str(repo_path)), parse_mount_options([]))
    tree.resolve("/")
    start = time.perf_counter()
    names = tree.resolve("/@snapshots").names()
    return time.perf_counter() - start, len(names)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 commits, not 1,000")
    args = parser.parse_args(argv)
    commits = 200 if args.quick else 1000
    import icechunk

    icechunk.set_logs_filter("error")
    took, count = time_snapshot_listing(build_history(commits))
    print(f"listing @snapshots/ of {count} snapshots: {took * 1e3:.0f} ms")
    passed = took < 1.0
    print(f"{'PASS' if passed else 'FAIL'}  under 1 s")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
