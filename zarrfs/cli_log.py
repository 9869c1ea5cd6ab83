"""``zarrfs log``: the history of an Icechunk repository, newest first: each snapshot's id,
time (UTC), the branches and tags at it, and its message (``--json``: the same as JSON)."""

from __future__ import annotations

import json
import sys

from .storage_options import VERSION_FLAGS, from_args


def snapshot_time(written_at) -> str:
    """A snapshot's time as ``log`` and the mount's ``info.txt`` show it."""
    return written_at.strftime("%Y-%m-%d %H:%M:%S UTC")


def cmd_log(args) -> int:
    import zarrfs.engine as engine

    options = from_args(args)
    version = {k: options.pop(k) for k in VERSION_FLAGS if k in options}
    repo = engine.Repository(args.url, **options)
    snapshots = repo.ancestry(**version) if version else repo.history()
    if args.max_count is not None:
        snapshots = snapshots[: args.max_count]
    refs = repo.refs_at()
    if args.json:
        rows = [
            {
                "id": s.id,
                "parent_id": s.parent_id,
                "written_at": s.written_at.isoformat(),
                "message": s.message,
                "refs": refs.get(s.id, []),
            }
            for s in snapshots
        ]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    for s in snapshots:
        at = f"  ({', '.join(refs[s.id])})" if s.id in refs else ""
        message = " ".join(s.message.split())
        sys.stdout.write(f"{s.id}  {snapshot_time(s.written_at)}{at}  {message}\n")
    return 0


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "log",
        parents=[common],
        help="an Icechunk repository's history (every branch's, or one version's)",
    )
    p.add_argument("url")
    p.add_argument("-n", "--max-count", type=int, default=None, help="show at most N snapshots")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_log)
