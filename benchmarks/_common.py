"""Small helpers shared by the benchmarks: a latency HTTP server in a child process, timing.

Why a child process: the clients being measured (zarrfs, zarr-python) are Python too. A server
in the same process would compete with them for the GIL and charge its own Python time to
whichever client issues more requests. The child answers from one asyncio loop (``_AsyncServer``:
the same answers as ``tests.servers``: byte ranges, directory indexes, 404; each answer sent
``latency`` seconds after its request arrived, plus up to ``jitter`` seconds more, drawn from a
seeded generator, as object stores vary; request records) over a directory it keeps in memory
once read, so the disk is not part of what is measured.

Two extras in the child: keys starting with ``_alias<anything>/`` are served as if that first
component were absent (a fresh URL for the same data defeats any cache keyed by URL, for cold
reads), and ``__bench__/records`` / ``__bench__/reset`` read and clear the request log.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.servers import _content_type, apply_range, directory_index  # noqa: E402

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

    def __init__(self, root: str | Path, latency: float = 0.0, jitter: float = 0.0):
        self.root = Path(root)
        self.latency = latency
        self.jitter = jitter
        self._proc: subprocess.Popen | None = None
        self.port = 0

    def __enter__(self) -> ServedDirectory:
        self._proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--serve",
                str(self.root),
                str(self.latency),
                str(self.jitter),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=REPO,
            text=True,
        )
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


class _Connection(asyncio.Protocol):
    """One kept-alive HTTP/1.1 connection of the child's server: GET and HEAD, byte ranges,
    directory indexes (the same answers as ``tests.servers``), each answer sent ``latency``
    seconds after its request arrived. Clients send one request at a time per connection."""

    def __init__(self, server: _AsyncServer):
        self.server = server
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while b"\r\n\r\n" in self.buffer:
            head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            self.server.request(self, head.decode("latin-1"), time.perf_counter())


class _AsyncServer:
    """The benchmark's server: one asyncio loop, so hundreds of concurrent requests cost it
    tens of microseconds each, and a request's start is when it arrived, not when a thread got
    round to it (a threaded Python server in this child took ~50 ms to begin 256 requests,
    more than the 20 ms being simulated, and counted that as extra round trips)."""

    def __init__(self, source, latency: float, jitter: float = 0.0):
        self.source = source
        self.latency = latency
        self.jitter = jitter
        self.random = random.Random(0)
        self.records: list[list] = []
        self.loop = asyncio.new_event_loop()

    def request(self, conn: _Connection, head: str, start: float) -> None:
        line, *fields = head.split("\r\n")
        method, target, _ = line.split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, _, v in (f.partition(":") for f in fields)}
        key = unquote(urlsplit(target).path).lstrip("/")
        if key.startswith(_CONTROL):  # answered at once, never recorded
            return self._send(conn, method, key, headers, start, record=False)
        delay = self.latency + self.jitter * self.random.random()
        self.loop.call_at(self.loop.time() + delay, self._send, conn, method, key, headers, start)

    def _send(self, conn, method, key, headers, start, record=True) -> None:
        body = self.source.get(key)
        extra: dict[str, str] = {}
        if body is None:
            names = self.source.list_dir(key)
            status, ctype = (404, "text/plain") if names is None else (200, "text/html")
            body = b"not found\n" if names is None else directory_index(key, names)
        else:
            status, extra, body = apply_range(body, headers.get("range"))
            ctype = _content_type(key)
        payload = body if method == "GET" else b""
        lines = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'OK')}",
            f"Content-Type: {ctype}",
            f"Content-Length: {len(body)}",
            "Accept-Ranges: bytes",
            *(f"{k}: {v}" for k, v in extra.items()),
        ]
        if record:
            self.records.append(
                [method, "/" + key, headers.get("range"), start, time.perf_counter()]
            )
        if not conn.transport.is_closing():
            conn.transport.write(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)

    def serve(self) -> int:
        server = self.loop.run_until_complete(
            self.loop.create_server(lambda: _Connection(self), "127.0.0.1", 0, backlog=1024)
        )
        return server.sockets[0].getsockname()[1]


_REASONS = {200: "OK", 206: "Partial Content", 404: "Not Found", 416: "Range Not Satisfiable"}


def _serve(root: str, latency: float, jitter: float) -> None:
    from tests import servers

    files = servers.DirSource(root)
    memory: dict[str, bytes | None] = {}
    server: _AsyncServer

    def control(key: str) -> bytes | None:
        if key == _CONTROL + "reset":
            server.records.clear()
            return b"ok"
        if key == _CONTROL + "records":
            return json.dumps(server.records).encode()
        return None

    def cached(key: str) -> bytes | None:
        key = _ALIAS.sub("", key)
        if key not in memory:
            memory[key] = files.get(key)
        return memory[key]

    server = _AsyncServer(servers.make_source([control, cached]), latency, jitter)
    print(server.serve(), flush=True)
    # the parent closes our stdin to stop us
    server.loop.run_until_complete(server.loop.run_in_executor(None, sys.stdin.read))


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "--serve":
    _serve(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))


def wait_for(app, predicate, timeout: float = 60.0) -> bool:
    """Run the Qt event loop until ``predicate()`` holds (True) or ``timeout`` passes (False)."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        app.processEvents()
        if predicate():
            return True
        time.sleep(0.0005)
    return False


def close_window(app, window) -> None:
    """Close a benchmark's viewer window and delete it, as a user's viewer ends with its one
    window: a closed window left alive keeps its planes, pictures and Qt backing store, which
    one process running benchmark after benchmark would count as the next window's memory
    (about 60 MB over ``bench_viewer.py``'s four windows)."""
    from PySide6.QtCore import QEvent

    window.close()
    window.deleteLater()
    app.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    app.processEvents()


def viewer_bench_main(run) -> int:
    """A viewer benchmark's ``main``: ``run(app, data_dir)`` offscreen, its result as JSON."""
    import json

    from zarrfs.viewer.app import make_app

    app = make_app()
    data = Path(__file__).resolve().parent / "_data"
    data.mkdir(parents=True, exist_ok=True)
    print(json.dumps(run(app, data), indent=2))
    return 0


def shown_window(app, url: str):
    """A 1400 x 900 viewer window showing ``url``, once its first plane is drawn:
    ``(window, done)``, ``done`` listing the generations the image view finished since."""
    from zarrfs.viewer.main_window import MainWindow

    window = MainWindow()
    window.resize(1400, 900)
    window.show()
    window.open_store(url, {})
    view = window.image
    done: list[int] = []
    view.controller.finished.connect(lambda g: done.append(g))
    wait_for(app, lambda: done and view.state is not None, 60)
    return window, done
