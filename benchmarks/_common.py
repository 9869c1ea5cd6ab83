"""Small helpers shared by the benchmarks: a latency HTTP server in a child process, timing.

Why a child process: the clients being measured (zarrfs, zarr-python) are Python too. A server
in the same process would compete with them for the GIL and charge its own Python time to
whichever client issues more requests. The child runs the team's loopback server
(``tests.servers.HttpServer``: per-request latency, byte ranges, request records) over a
directory it keeps in memory once read, so the disk is not part of what is measured.

Two extras in the child: keys starting with ``_alias<anything>/`` are served as if that first
component were absent (a fresh URL for the same data defeats any cache keyed by URL, for cold
reads), and ``__bench__/records`` / ``__bench__/reset`` read and clear the request log.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

_ALIAS = re.compile(r"^_alias[^/]*/")
_CONTROL = "__bench__/"


# ------------------------------------------------------------------------------------ timing


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """(seconds, result) of one call."""
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def median(values) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


# --------------------------------------------------------------------------- request records


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    range: str | None
    start: float
    end: float


def round_trips(records: list[Request]) -> int:
    """Sequential waves of requests: the most requests no two of which were in flight at once
    (the same definition as ``tests.servers.RequestStats.round_trips``)."""
    count, last_end = 0, float("-inf")
    for r in sorted(records, key=lambda r: r.end):
        if r.start > last_end:
            count, last_end = count + 1, r.end
    return count


class ServedDirectory:
    """``root`` served over loopback HTTP by a child process, ``latency`` seconds per request.

    ``url`` is the root URL; ``alias_url(tag)`` a distinct URL for the same files;
    ``records()`` the requests since the last ``reset()`` (control requests excluded).
    """

    def __init__(self, root: str | Path, latency: float = 0.0):
        self.root = Path(root)
        self.latency = latency
        self._proc: subprocess.Popen | None = None
        self.port = 0

    def __enter__(self) -> ServedDirectory:
        self._proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(self.root), str(self.latency)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO, text=True)
        line = self._proc.stdout.readline()
        if not line.strip().isdigit():
            self.close()
            raise RuntimeError(f"benchmark HTTP server did not start: {line!r}")
        self.port = int(line)
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._proc is not None:
            try:
                self._proc.stdin.close()  # the child exits when its stdin closes
                self._proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def alias_url(self, tag: str) -> str:
        return f"{self.url}/_alias{tag}"

    def _control(self, what: str) -> bytes:
        with urllib.request.urlopen(f"{self.url}/{_CONTROL}{what}", timeout=30) as resp:
            return resp.read()

    def reset(self) -> None:
        self._control("reset")

    def records(self) -> list[Request]:
        rows = json.loads(self._control("records"))
        return [Request(*row) for row in rows if _CONTROL not in row[1]]


# ------------------------------------------------------------------------------------ child


def _serve(root: str, latency: float) -> None:
    import socketserver

    from tests import servers

    if not issubclass(servers._Server, socketserver.ThreadingMixIn):
        # tests/servers.py answered one request at a time when this was written; a benchmark
        # of concurrent clients needs concurrent answers, so thread it here (child only).
        servers._Server = type("_Server", (socketserver.ThreadingMixIn, servers._Server),
                               {"daemon_threads": True})
    files = servers.DirSource(root)
    memory: dict[str, bytes | None] = {}
    server: servers.HttpServer

    def control(key: str) -> bytes | None:
        if key == _CONTROL + "reset":
            server.stats.reset()
            return b"ok"
        if key == _CONTROL + "records":
            return json.dumps([[r.method, r.path, r.range, r.start, r.end]
                               for r in server.stats.records()]).encode()
        return None

    def cached(key: str) -> bytes | None:
        key = _ALIAS.sub("", key)
        if key not in memory:
            memory[key] = files.get(key)
        return memory[key]

    server = servers.HttpServer([control, cached], latency=latency).start()
    print(server.port, flush=True)
    sys.stdin.read()
    server.close()


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--serve":
    _serve(sys.argv[2], float(sys.argv[3]))
