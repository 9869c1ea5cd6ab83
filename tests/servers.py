"""Loopback test servers that behave like a static web server / object store.

The engine, mount and viewer tests read Zarr data over HTTP through fsspec's HTTPFileSystem
(aiohttp). :class:`HttpServer` serves a directory, a dict of key -> bytes, or a callable
``generate(key) -> bytes | None`` (or a list of these, consulted in order) with byte ranges,
HEAD, keep-alive, HTML directory indexes (for ``fs.ls``), per-request latency, request counters
and switchable faults. Counters are what tests assert on instead of wall-clock timings:
:meth:`RequestStats.round_trips` counts sequential waves of requests from the server's own
start/end records. Sources are in ``tests/http_sources.py``, S3 (moto) in ``tests/s3server.py``.
"""

from __future__ import annotations

import hashlib
import html
import logging
import math
import re
import socket
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote, urlsplit

from tests.http_sources import (  # noqa: F401 (re-exported for tests)
    CallableSource,
    DictSource,
    DirSource,
    LayeredSource,
    make_source,
)

logger = logging.getLogger(__name__)

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


# ------------------------------------------------------------------------------------- counters


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it; ``start``/``end`` are perf_counter seconds."""

    method: str
    path: str
    range: str | None
    status: int
    bytes_sent: int
    start: float
    end: float
    peer_port: int  # the client's port: equal ports mean one kept-alive connection
    headers: tuple[tuple[str, str], ...] = ()  # as the client sent them


class RequestStats:
    """Thread-safe request counters and a log, so tests count requests and overlap, not time."""

    def __init__(self):
        self._lock = threading.Lock()
        self._log: list[RequestRecord] = []
        self.in_flight = 0  # requests received and not yet answered

    def begin(self) -> None:
        with self._lock:
            self.in_flight += 1

    def add(self, record: RequestRecord) -> None:
        with self._lock:
            self.in_flight -= 1
            self._log.append(record)

    def reset(self) -> None:
        with self._lock:
            self._log.clear()

    def records(self, match: str | None = None) -> list[RequestRecord]:
        """A copy of the log; ``match`` keeps records whose path matches the regex (search)."""
        with self._lock:
            log = list(self._log)
        return [r for r in log if match is None or re.search(match, r.path)]

    @property
    def log(self) -> list[tuple[str, str, str | None]]:
        return [(r.method, r.path, r.range) for r in self.records()]

    @property
    def requests(self) -> Counter:
        """Number of requests by method (``stats.requests["GET"]``)."""
        return Counter(r.method for r in self.records())

    @property
    def bytes_sent(self) -> int:
        return sum(r.bytes_sent for r in self.records())

    def round_trips(self, match: str | None = None) -> int:
        """The largest number of requests no two of which were in flight at the same time.

        That is the number of sequential waves the client needed: requests issued together
        overlap (1 wave), each request issued after the previous answer starts after it ended.
        For intervals on a line, pairwise overlap means one common instant, so
        ``round_trips() == 1`` proves all requests were in flight at once (use latency so
        that concurrent requests reliably overlap). Greedy earliest-end is optimal here.
        """
        count, last_end = 0, float("-inf")
        for r in sorted(self.records(match), key=lambda r: r.end):
            if r.start > last_end:
                count, last_end = count + 1, r.end
        return count

    def max_in_flight(self, match: str | None = None) -> int:
        """The most requests the server was handling at one instant."""
        events = sorted(
            [(r.start, 1) for r in self.records(match)]
            + [(r.end, -1) for r in self.records(match)],
            key=lambda e: (e[0], e[1]),
        )
        best = current = 0
        for _, delta in events:
            current += delta
            best = max(best, current)
        return best


# --------------------------------------------------------------------------------------- faults


@dataclass
class FaultRule:
    """One fault: ``kind`` in status|truncate|stall|reset, for keys matching ``pattern``."""

    kind: str
    pattern: str | None = None
    remaining: int | None = None  # None: until cleared
    status: int = 503
    seconds: float = 0.0
    keep: int | None = None  # truncate: body bytes actually sent (default half)
    methods: tuple[str, ...] = ("GET", "HEAD")
    #: the share of matching requests the fault hits, drawn from ``seed`` and the request
    #: (method, key, range, and how many times it was asked before): the same requests in the
    #: same order meet the same faults, whatever the threads' timing
    fraction: float = 1.0
    seed: int = 0
    _asked: Counter = field(default_factory=Counter, repr=False)

    def matches(self, method: str, key: str, range_: str | None = None) -> bool:
        if self.remaining == 0 or method not in self.methods:
            return False
        if self.pattern is not None and re.search(self.pattern, key) is None:
            return False
        return self.fraction >= 1.0 or self._draw(method, key, range_) < self.fraction

    def _draw(self, method: str, key: str, range_: str | None) -> float:
        """A number in [0, 1) fixed by the seed, the request, and its repetition."""
        request = (method, key, range_)
        n = self._asked[request]
        self._asked[request] += 1
        text = f"{self.seed}|{method}|{key}|{range_}|{n}".encode()
        return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") / 2**64


@dataclass
class Faults:
    """Faults tests switch on and off while the server runs; the first matching rule applies."""

    rules: list[FaultRule] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, rule: FaultRule) -> FaultRule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def status(self, status=503, count=None, pattern=None) -> FaultRule:
        """Answer ``status`` for ``count`` requests (all if None) whose key matches ``pattern``."""
        return self.add(FaultRule("status", pattern, count, status=status))

    def fail_next(self, count: int, status=503) -> FaultRule:
        return self.status(status, count)

    def truncate(self, count=None, pattern=None, keep=None) -> FaultRule:
        """Promise the full Content-Length, send ``keep`` bytes (default half), then close."""
        return self.add(FaultRule("truncate", pattern, count, keep=keep, methods=("GET",)))

    def stall(self, seconds: float, count=None, pattern=None, fraction=1.0, seed=0) -> FaultRule:
        """Wait ``seconds`` (``math.inf``: until the server closes) before answering normally;
        with ``fraction``, only that share of the matching requests (seeded, see FaultRule)."""
        rule = FaultRule("stall", pattern, count, seconds=seconds, fraction=fraction, seed=seed)
        return self.add(rule)

    def reset(self, count=None, pattern=None) -> FaultRule:
        """Close the connection with a TCP RST instead of answering.

        aiohttp retries an idempotent request once after a reset, so ``count=1`` is invisible
        to fsspec clients; use ``count=None`` (or >= 2) to make the client see the error.
        """
        return self.add(FaultRule("reset", pattern, count))

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()

    def take(self, method: str, key: str, range_: str | None = None) -> FaultRule | None:
        """The rule that applies to this request, consuming one of its uses."""
        with self._lock:
            for rule in self.rules:
                if rule.matches(method, key, range_):
                    if rule.remaining is not None:
                        rule.remaining -= 1
                    return rule
        return None


# ----------------------------------------------------------------------------------- the server


def apply_range(body: bytes, header: str | None) -> tuple[int, dict[str, str], bytes]:
    """(status, extra headers, payload) for a Range header, as RFC 9110 section 14 says.

    A header we do not understand (other units, several ranges, last < first) is ignored and
    the whole object sent with 200, as a server may; an unsatisfiable range is 416.
    """
    size = len(body)
    match = _RANGE.match(header.strip()) if header else None
    if match is None or match.groups() == ("", ""):
        return 200, {}, body
    first, last = match.groups()
    if first == "":
        start, end = max(0, size - int(last)), size - 1
        unsatisfiable = int(last) == 0 or size == 0
    else:
        start, end = int(first), min(int(last) if last else size - 1, size - 1)
        if last and int(last) < start:
            return 200, {}, body
        unsatisfiable = start >= size
    if unsatisfiable:
        return 416, {"Content-Range": f"bytes */{size}"}, b"range not satisfiable\n"
    return 206, {"Content-Range": f"bytes {start}-{end}/{size}"}, body[start : end + 1]


def _content_type(key: str) -> str:
    return (
        "application/json"
        if key.endswith((".json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"))
        else "application/octet-stream"
    )


def directory_index(key: str, names: list[str]) -> bytes:
    """An HTML index with absolute-path links, the form fsspec's HTTP ``ls`` parses."""
    base = "/" + key.strip("/") + "/" if key.strip("/") else "/"
    items = "".join(
        f'<li><a href="{html.escape(quote(base + name))}">{html.escape(name)}</a></li>\n'
        for name in names
    )
    return f"<!DOCTYPE html>\n<html><body><ul>\n{items}</ul></body></html>\n".encode()


class _Handler(BaseHTTPRequestHandler):
    """One connection; HTTP/1.1 keep-alive, so every response carries Content-Length."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self):
        self._serve(send_body=True)

    def do_HEAD(self):
        self._serve(send_body=False)

    def log_message(self, format, *args):  # noqa: A002 (stdlib signature)
        logger.debug("%s " + format, self.address_string(), *args)

    def _serve(self, send_body: bool) -> None:
        owner: HttpServer = self.server.owner  # type: ignore[attr-defined]
        self._start = time.perf_counter()
        self._recorded = False
        key = unquote(urlsplit(self.path).path).lstrip("/")
        owner.stats.begin()
        try:
            owner.wait(owner.latency)
            rule = owner.faults.take(self.command, key, self.headers.get("Range"))
            self._respond(owner, rule, key, send_body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its timeout)
        finally:
            self._record(0, 0)  # no-op when the response already recorded itself

    def _record(self, status: int, sent: int) -> None:
        """Log this request once, just BEFORE the client can see the response complete.

        A test asserts on the log right after its client call returns, so the record must
        already be there; ``end`` is thus "response about to be flushed".
        """
        if self._recorded:
            return
        self._recorded = True
        record = RequestRecord(
            method=self.command,
            path=urlsplit(self.path).path,
            range=self.headers.get("Range"),
            status=status,
            bytes_sent=sent,
            start=self._start,
            end=time.perf_counter(),
            peer_port=self.client_address[1],
            headers=tuple(self.headers.items()),
        )
        self.server.owner.stats.add(record)  # type: ignore[attr-defined]

    def _respond(self, owner, rule, key, send_body) -> None:
        kind = rule.kind if rule is not None else None
        if kind == "stall":
            owner.wait(rule.seconds)
        if kind == "reset":
            self._record(0, 0)
            self._reset()
            return
        if kind == "status":
            return self._send(rule.status, b"injected fault\n", "text/plain", send_body)
        body = owner.source.get(key)
        if body is None and owner.objects_only:  # S3's answer without ListBucket
            return self._send(403, b"access denied\n", "text/plain", send_body)
        if body is None:
            names = owner.source.list_dir(key) if owner.listings else None
            if names is None:
                return self._send(404, b"not found\n", "text/plain", send_body)
            return self._send(200, directory_index(key, names), "text/html", send_body)
        if owner.etags:  # a strong validator of the content, as a static web server sends
            etag = f'"{hashlib.sha1(body).hexdigest()[:20]}"'
            if self.headers.get("If-Match", etag) not in (etag, "*"):
                return self._send(412, b"precondition failed\n", "text/plain", send_body)
        status, headers, payload = apply_range(body, self.headers.get("Range"))
        if owner.etags:
            headers["ETag"] = etag
        keep = None
        if kind == "truncate":
            keep = rule.keep if rule.keep is not None else len(payload) // 2
        return self._send(status, payload, _content_type(key), send_body, headers, keep)

    def _send(self, status, body, content_type, send_body, headers=None, keep=None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        payload = body if keep is None else body[: min(keep, len(body))]
        if not send_body:
            payload = b""
        self._record(status, len(payload))
        self.end_headers()
        self.wfile.write(payload)
        if keep is not None:
            self.close_connection = True  # fewer bytes than promised, then EOF

    def _reset(self) -> None:
        """Abort with RST: SO_LINGER 0 then close, before any byte of a response."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256  # the default 5 drops SYNs when a client opens 64 connections at once

    def __init__(self, owner: HttpServer):
        self.owner = owner
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request, client_address):
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        """Wake handler threads blocked on idle keep-alive connections so they exit."""
        with self.connections_lock:
            connections = list(self.connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class HttpServer:
    """A static-file/object-store lookalike on 127.0.0.1 in a background thread.

    ``source``: a directory, a dict key -> bytes, ``generate(key) -> bytes | None``, or a list
    of these (first hit wins). ``latency`` (seconds, settable at runtime) is slept in each
    handler thread, so concurrent requests overlap. ``stats`` counts, ``faults`` injects.
    ``objects_only`` (settable): answer 403 for every key that is not an object (missing keys
    and directory listings alike), as S3 does for a client allowed GetObject but not ListBucket;
    ``listings`` (settable, default True): False answers 404 for directories, as a web server
    without directory pages (or S3 over HTTPS) does; ``etags`` (settable, default False): send
    each object's ETag (a hash of its bytes) and answer 412 to an ``If-Match`` naming another.
    """

    def __init__(self, source: object, latency: float = 0.0):
        self.source = make_source(source)
        self.latency = latency
        self.objects_only = False
        self.listings = True
        self.etags = False
        self.stats = RequestStats()
        self.faults = Faults()
        self._closing = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> HttpServer:
        self._httpd = _Server(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"http-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url_for(self, key: str = "") -> str:
        return f"{self.url}/{quote(key.lstrip('/'))}"

    def wait(self, seconds: float) -> None:
        """Sleep in a handler thread; cut short when the server closes (``math.inf``: until
        then)."""
        if seconds > 0:
            self._closing.wait(None if math.isinf(seconds) else seconds)

    def close(self) -> None:
        """Stop accepting, end sleeps, let in-flight answers go out, then drop idle connections."""
        self._closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            deadline = time.monotonic() + 5
            while self.stats.in_flight and time.monotonic() < deadline:
                time.sleep(0.01)  # let requests woken from latency/stalls finish answering
            self._httpd.drop_connections()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._httpd = self._thread = None

    def __enter__(self) -> HttpServer:
        return self if self._httpd is not None else self.start()

    def __exit__(self, *exc) -> None:
        self.close()
