"""Local reads through the store: whole objects, ranges and suffixes, as ByteRequest says."""

from __future__ import annotations

import pytest

from zarrfs.engine.store import ByteRequest, Store

DATA = bytes(range(256)) * 40  # 10,240 bytes, every offset distinguishable


@pytest.fixture
def store(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "0").write_bytes(DATA)
    (tmp_path / "empty").write_bytes(b"")
    return Store.from_url(str(tmp_path))


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (None, None, DATA),
        (0, 100, DATA[:100]),
        (5000, 5100, DATA[5000:5100]),
        (10_000, 20_000, DATA[10_000:]),  # past the end: what there is
        (20_000, 20_100, b""),
        (-100, None, DATA[-100:]),  # suffix
        (-20_000, None, DATA),  # a suffix longer than the object
        (300, None, DATA[300:]),  # from an offset to the end
    ],
)
def test_local_ranges(store, start, end, expected):
    assert store.fetch([ByteRequest("c/0", start, end)]) == [expected]


def test_local_whole_objects_missing_and_empty(store):
    assert store.fetch([ByteRequest("c/0"), ByteRequest("c/1"), ByteRequest("empty")]) == [
        DATA,
        None,
        b"",
    ]


def test_a_folder_where_an_object_should_be_is_an_error_not_data(store):
    out = store.fetch_each([ByteRequest("c")])
    assert isinstance(out[0], Exception) and "'c'" in str(out[0])


def test_the_answers_of_one_turn_of_the_loop_reach_the_reader_as_one_burst(monkeypatch):
    """Answers that land in one turn of the event loop are handed over together (one wake-up
    of the reader, not one per answer), each under its own index, and the end once all came."""
    import asyncio
    import queue

    from zarrfs.engine import store_async, store_faults

    monkeypatch.setattr(store_faults, "RETRY_DELAY", 0.0)

    loop = asyncio.new_event_loop()
    futures: dict[str, asyncio.Future] = {}

    def start(path: str, req: ByteRequest) -> asyncio.Future:
        futures[path] = loop.create_future()
        return futures[path]

    async def turns(n: int) -> None:
        for _ in range(n):
            await asyncio.sleep(0)

    arrived: queue.SimpleQueue = queue.SimpleQueue()
    requests = [ByteRequest(f"k{i}") for i in range(5)]
    batch = store_async._Batch(loop, requests, lambda key: f"/{key}", start, arrived)
    try:
        loop.call_soon(batch.begin)
        loop.run_until_complete(turns(2))
        assert sorted(futures) == [f"/k{i}" for i in range(5)] and arrived.empty()
        for i in (3, 0, 1):
            futures[f"/k{i}"].set_result(f"body {i}".encode())
        loop.run_until_complete(turns(4))
        assert arrived.get_nowait() == [(3, b"body 3"), (0, b"body 0"), (1, b"body 1")]
        assert arrived.empty()
        futures["/k2"].set_exception(ConnectionRefusedError("refused"))  # retried: no answer
        futures["/k4"].set_result(b"body 4")
        loop.run_until_complete(turns(4))
        assert arrived.get_nowait() == [(4, b"body 4")] and arrived.empty()
        futures["/k2"].set_result(b"body 2")  # the retry's future (a new one, same path)
        loop.run_until_complete(turns(4))
        assert arrived.get_nowait() == [(2, b"body 2")]
        assert arrived.get_nowait() is store_async._END
    finally:
        batch.cancel()
        loop.close()


def test_the_last_answer_reaches_the_reader_in_the_turn_it_lands():
    """The answer that completes a batch is handed over, with the end, in the very turn of the
    loop its future completes: the read's last decode waits for no further turn."""
    import asyncio
    import queue

    from zarrfs.engine import store_async

    loop = asyncio.new_event_loop()
    futures: dict[str, asyncio.Future] = {}

    def start(path: str, req: ByteRequest) -> asyncio.Future:
        futures[path] = loop.create_future()
        return futures[path]

    def one_turn() -> None:  # the callbacks ready now, and nothing scheduled by them
        loop.call_soon(loop.stop)
        loop.run_forever()

    arrived: queue.SimpleQueue = queue.SimpleQueue()
    requests = [ByteRequest(f"k{i}") for i in range(3)]
    batch = store_async._Batch(loop, requests, lambda key: f"/{key}", start, arrived)
    try:
        loop.call_soon(batch.begin)
        one_turn()
        one_turn()  # (gcpause's release)
        futures["/k1"].set_result(b"one")
        futures["/k0"].set_result(b"zero")
        one_turn()
        one_turn()
        assert arrived.get_nowait() == [(1, b"one"), (0, b"zero")] and arrived.empty()
        futures["/k2"].set_result(b"two")
        one_turn()
        assert arrived.get_nowait() == [(2, b"two")]
        assert arrived.get_nowait() is store_async._END
        one_turn()
        assert arrived.empty()  # nothing handed over twice
    finally:
        batch.cancel()
        loop.close()


@pytest.mark.parametrize("expect", [0, 1, 100, len(DATA) - 1, len(DATA), len(DATA) + 1, 1 << 20])
def test_a_whole_object_read_after_any_guess_of_its_size(store, expect):
    """``read_each`` reads a local file in one call when it is shorter than the guess, and
    asks its size when it is not: the bytes are the file's either way, never cut at the
    guess; an absent object is None, an empty one empty, a folder an error of its own."""
    got = list(store.read_each(["c/0", "c/1", "empty", "c"], expect))
    assert got[:3] == [DATA, None, b""]
    assert isinstance(got[3], Exception) and "'c'" in str(got[3])


def test_read_each_reads_each_object_only_when_asked_and_counts_them(store, tmp_path):
    import zarrfs.engine as engine

    engine.reset_stats()
    answers = store.read_each(["c/0", "empty"], 64)
    assert next(answers) == DATA
    (tmp_path / "empty").write_bytes(b"written after the first was read")
    assert next(answers) == b"written after the first was read"  # read when taken, not before
    assert list(answers) == []
    counted = engine.stats()
    assert counted["requests"] == 2
    assert counted["bytes_fetched"] == len(DATA) + len(b"written after the first was read")


def test_a_long_range_is_read_whole_and_a_short_file_stops_it(store, tmp_path):
    """A bounded range is read with no size asked; past the file's end it stops there (a
    range of more than read_local's one-call bytes asks the size first: nothing allocated on
    a guess)."""
    from zarrfs.engine import confine

    path = str(tmp_path / "c" / "0")
    assert confine.read_local(path, 10, 10 + confine._ONE_CALL) == DATA[10:]
    assert confine.read_local(path, 10, 11 + confine._ONE_CALL) == DATA[10:]
    assert confine.read_local(path, 10_230, 10_250) == DATA[10_230:]


def test_read_each_takes_a_store_that_refused_every_request_as_down(store, monkeypatch):
    """As ``stream``: when every object of a read failed to connect, the next reads fail at
    once for a few seconds, each with an error naming its key, without asking again."""
    asked = []

    def refused(req, expect=0):
        asked.append(req.key)
        return ConnectionRefusedError("connection refused")

    monkeypatch.setattr(store, "_read_sync", refused)
    first = list(store.read_each(["c/0", "c/1"]))
    assert all(isinstance(e, Exception) and "refused" in str(e) for e in first)
    assert asked == ["c/0", "c/1"]
    again = list(store.read_each(["c/0", "empty"]))
    assert asked == ["c/0", "c/1"]  # not asked again
    assert [e.key for e in again] == ["c/0", "empty"]
    assert all("unreachable" in str(e) for e in again)


def test_request_threads_retry_each_request_and_stop_with_the_reader(monkeypatch):
    """On request threads (a transport's blocking ``get``) each request is retried on its own
    while it fails transiently, each answer reaches the reader as it lands, and a reader that
    stops early ends the stream at once, without waiting for a request still on the wire."""
    import collections
    import threading
    import time

    from zarrfs.engine import store_async, store_faults

    monkeypatch.setattr(store_faults, "RETRY_DELAY", 0.0)
    calls: collections.Counter = collections.Counter()
    threads = set()
    release = threading.Event()

    def get(path: str, req: ByteRequest) -> bytes:
        calls[path] += 1
        threads.add(threading.current_thread().name)
        if path == "/k1" and calls[path] == 1:
            raise ConnectionResetError("reset")  # transient: asked again
        if path == "/k2":
            release.wait(10)  # on the wire until the test ends
            return b"late"
        return f"body {path}".encode()

    requests = [ByteRequest(f"k{i}") for i in range(3)]
    stream = store_async.arrivals(None, None, "x://", requests, lambda key: f"/{key}", None, get)
    got: dict[int, object] = {}
    try:
        for burst in stream:
            got.update(burst)
            if len(got) == 2:
                break
        t0 = time.monotonic()
        stream.close()  # the reader stops: the stream ends without the third answer
        assert time.monotonic() - t0 < 1
        assert got == {0: b"body /k0", 1: b"body /k1"}
        assert calls == {"/k0": 1, "/k1": 2, "/k2": 1}
        assert threads == {"zarrfs-request"}
    finally:
        release.set()


def test_a_request_thread_answer_put_late_is_never_reported_dropped():
    """Two request threads answering at once: the one counted first but put last (here held
    between the two) still reaches the reader, and the stream's end comes after it."""
    import queue
    import threading

    from zarrfs.engine import store_async

    first_putting, last_put = threading.Event(), threading.Event()

    class Arrived:  # the queue the threads put on; the reader takes from the real one
        def __init__(self, real: queue.SimpleQueue):
            self.real = real

        def put(self, item) -> None:
            if isinstance(item, list) and item[0][0] == 0:  # k0's answer, counted already
                first_putting.set()
                last_put.wait(2)  # until k1 put its answer and the end (or a bounded while)
            self.real.put(item)
            if item is store_async._END:
                last_put.set()

    def get(path: str, req: ByteRequest) -> bytes:
        if path == "/k1":
            assert first_putting.wait(10)  # lands while k0's answer is on its way
        return f"body {path}".encode()

    real: queue.SimpleQueue = queue.SimpleQueue()
    requests = [ByteRequest("k0"), ByteRequest("k1")]
    batch = store_async._OnThreads(requests, lambda key: f"/{key}", get, Arrived(real))
    batch.begin()
    got = {}
    for burst in store_async._taken(real, batch, lambda: True, "x://", requests, None):
        got.update(burst)
    assert got == {0: b"body /k0", 1: b"body /k1"}


def test_a_read_interrupted_while_it_starts_its_request_threads_turns_the_collector_back_on(
    monkeypatch,
):
    """Ctrl-C while a read hands its requests to request threads: the interrupt goes to
    the reader, and the cyclic collector, held off for the sends, is on again."""
    import gc

    from zarrfs.engine import gcpause, store_async

    threads = store_async._RequestThreads()

    def submit_all(jobs) -> bool:
        raise KeyboardInterrupt  # e.g. while Thread.start() waits for a new thread

    monkeypatch.setattr(threads, "submit_all", submit_all)
    monkeypatch.setattr(store_async, "_threads", threads)
    requests = [ByteRequest(f"k{i}") for i in range(4)]
    before = gc.get_threshold()
    assert gc.isenabled() and before[0] != gcpause.HELD
    try:
        with pytest.raises(KeyboardInterrupt):
            list(store_async.arrivals(None, None, "x://", requests, str, None, lambda p, r: b""))
        assert gc.isenabled() and gc.get_threshold() == before
    finally:
        gc.enable()
        gc.set_threshold(*before)


def test_a_request_thread_that_ends_abnormally_is_counted_out(monkeypatch):
    """A request thread killed by its job (which should never raise) no longer counts as
    one the pool has: the pool starts another for the next job."""
    import threading

    from zarrfs.engine import store_async

    monkeypatch.setattr(threading, "excepthook", lambda args: None)
    threads = store_async._RequestThreads()
    ran: list[threading.Thread] = []
    started, done = threading.Event(), threading.Event()

    def fatal() -> None:
        ran.append(threading.current_thread())
        started.set()
        raise SystemExit

    assert threads.submit_all([fatal])
    assert started.wait(10)
    ran_on = ran[0]
    ran_on.join(10)
    assert not ran_on.is_alive() and threads.threads == 0
    assert threads.submit_all([done.set])
    assert done.wait(10) and threads.threads == 1


def test_request_threads_hold_the_collector_off_only_until_every_request_is_handed_over(
    monkeypatch,
):
    """The cyclic collector is off from before the first request goes to a request thread
    until every thread has called its transport, never while they wait for the answers (a
    stalled server would keep it off process-wide for two timeouts)."""
    import gc
    import threading

    from zarrfs.engine import gcpause, store_async

    events: list[str] = []
    lock = threading.Lock()

    def recording(name, original):
        def call() -> None:
            with lock:
                events.append(name)
            original()

        return call

    monkeypatch.setattr(gcpause, "hold", recording("hold", gcpause.hold))
    monkeypatch.setattr(gcpause, "release", recording("release", gcpause.release))
    n = 4
    all_waiting, answer = threading.Barrier(n + 1, timeout=10), threading.Event()

    def get(path: str, req: ByteRequest) -> bytes:
        with lock:
            events.append("get")
        all_waiting.wait()
        answer.wait(10)  # on the wire until the test has looked
        return f"body {path}".encode()

    requests = [ByteRequest(f"k{i}") for i in range(n)]
    got: dict[int, object] = {}

    def read() -> None:
        for burst in store_async.arrivals(
            None, None, "x://", requests, lambda k: f"/{k}", None, get
        ):
            got.update(burst)

    reader = threading.Thread(target=read)
    before = gc.get_threshold()
    assert gc.isenabled() and before[0] != gcpause.HELD
    reader.start()
    try:
        all_waiting.wait()  # every request on the wire, none answered
        on_while_waiting = gc.get_threshold() == before
    finally:
        answer.set()
        reader.join(10)
        gc.enable()
    assert on_while_waiting
    assert events[0] == "hold" and events.count("release") == 1
    assert events.count("get") == n and events.index("release") < len(events) - 1
    assert got == {i: f"body /k{i}".encode() for i in range(n)}
    assert gc.isenabled() and gc.get_threshold() == before


def test_two_reads_never_count_on_the_same_free_request_threads(monkeypatch):
    """Two small reads starting together near the pool's limit: the second to take its
    threads finds too few free and goes through the loop, never queued behind the first's
    requests (here stalled)."""
    import threading

    from zarrfs.engine import store_async

    monkeypatch.setattr(store_async, "_MAX_THREADS", 4)
    monkeypatch.setattr(store_async, "_threads", store_async._RequestThreads())
    first_on_the_wire = threading.Barrier(3 + 1, timeout=10)
    let_first_go = threading.Event()
    via: list[str] = []

    def first_get(path: str, req: ByteRequest) -> bytes:
        first_on_the_wire.wait()
        let_first_go.wait(10)  # stalled until the second read is done
        return b"first"

    def second_path(key: str) -> str:  # the second read, between its check and its submits
        if key == "k0" and not via:
            via.append("checked")
            first_on_the_wire.wait()  # until the first read's requests took 3 of 4 threads
        return f"/{key}"

    def second_get(path: str, req: ByteRequest) -> bytes:
        via.append("thread")
        return b"second"

    async def start(path: str, req: ByteRequest) -> bytes:
        via.append("loop")
        return b"second"

    requests = [ByteRequest(f"k{i}") for i in range(3)]
    first: dict[int, object] = {}
    second: dict[int, object] = {}

    def read(out, path, get) -> None:
        for burst in store_async.arrivals(None, start, "x://", requests, path, None, get):
            out.update(burst)

    readers = [
        threading.Thread(target=read, args=(second, second_path, second_get)),
        threading.Thread(target=read, args=(first, lambda k: f"/{k}", first_get)),
    ]
    for reader in readers:
        reader.start()
    try:
        readers[0].join(10)  # (without waiting on the first: its requests are stalled)
        done_while_first_stalled = not readers[0].is_alive()
    finally:
        let_first_go.set()
        for reader in readers:
            reader.join(10)
    assert done_while_first_stalled and via == ["checked"] + ["loop"] * 3
    assert second == dict.fromkeys(range(3), b"second")
    assert first == dict.fromkeys(range(3), b"first")
