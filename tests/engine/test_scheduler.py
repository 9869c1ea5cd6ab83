"""The decode pool: one worker per CPU the process may use (affinity and cgroup quota), sizes
settable, each worker kept on a CPU of its own only when the program asks."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
import weakref

import numpy as np
import pytest
import zarr

import zarrfs
from zarrfs.engine import chunkloop, scheduler
from zarrfs.engine import native as native_path

linux_affinity = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="CPU affinity is a Linux call"
)


def _worker_cpus() -> dict[str, set[int]]:
    """Each decode worker's name and the CPUs it may run on, asked from inside every worker
    at once (a barrier makes sure no worker answers twice)."""
    workers = scheduler.decode_workers()
    barrier = threading.Barrier(workers, timeout=30)

    def where():
        barrier.wait()
        return threading.current_thread().name, os.sched_getaffinity(0)

    futures = [scheduler.run_decode(where) for _ in range(workers)]
    return dict(f.result(timeout=60) for f in futures)


@pytest.fixture
def threads():
    """Pool settings changed by a test are put back, with fresh pools, afterwards."""
    saved = scheduler._threads
    try:
        yield
    finally:
        scheduler._threads = saved
        scheduler.set_threads()


@linux_affinity
def test_decode_workers_are_not_pinned_unless_asked(threads):
    cpus = os.sched_getaffinity(0)
    if len(cpus) < 2:
        pytest.skip("one CPU: nothing to spread")
    scheduler.set_threads()  # fresh pools with the defaults
    seen = _worker_cpus()
    assert all(mask == cpus for mask in seen.values()), seen


@linux_affinity
def test_each_decode_worker_has_a_cpu_of_its_own_when_asked(threads):
    cpus = os.sched_getaffinity(0)
    if len(cpus) < 2:
        pytest.skip("one CPU: nothing to spread")
    scheduler.set_threads(pin=True)
    assert scheduler.decode_workers() == len(cpus)
    seen = _worker_cpus()
    assert len(seen) == len(cpus)
    assert all(len(mask) == 1 for mask in seen.values()), seen
    assert set().union(*seen.values()) == cpus


def test_pool_sizes_are_settable(threads):
    scheduler.set_threads(decode=3, io=5)
    assert scheduler.decode_workers() == 3
    assert len(_worker_cpus()) == 3
    assert scheduler._pool("io")._workers == 5
    with pytest.raises(ValueError, match="positive"):
        scheduler.set_threads(decode=0)


def test_pool_sizes_from_the_environment():
    script = (
        "from zarrfs.engine import scheduler\n"
        "print(scheduler.decode_workers(), scheduler._pool('io')._workers)\n"
    )
    env = {**os.environ, "ZARRFS_DECODE_THREADS": "3", "ZARRFS_IO_THREADS": "7"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "7"]


@pytest.mark.parametrize(
    ("cpu_max", "workers"), [("100000 100000", 1), ("150000 100000", 2), ("max 100000", None)]
)
def test_decode_workers_follow_the_cgroup_cpu_quota(
    tmp_path, monkeypatch, threads, cpu_max, workers
):
    """In a container with a CPU quota, one decode worker per CPU of the quota (rounded up),
    not one per CPU of the host."""
    (tmp_path / "cpu.max").write_text(cpu_max + "\n")
    monkeypatch.setattr(scheduler, "_CGROUP_V2", str(tmp_path / "cpu.max"))
    monkeypatch.setattr(scheduler, "_cpus", lambda: list(range(64)))
    monkeypatch.setattr(scheduler, "_usable_cpus", None)  # asked once a process: ask again
    scheduler.set_threads()
    assert scheduler.decode_workers() == (workers or 64)


def test_a_cgroup_v1_quota_is_read_and_its_files_closed(tmp_path, monkeypatch, threads):
    """cgroup v1 states the quota in two files: 250000 of 100000 is three workers, and both
    files are closed once read (an open file left to the collector warns)."""
    import gc
    import warnings

    (tmp_path / "quota").write_text("250000\n")
    (tmp_path / "period").write_text("100000\n")
    monkeypatch.setattr(scheduler, "_CGROUP_V2", str(tmp_path / "absent"))
    monkeypatch.setattr(
        scheduler, "_CGROUP_V1", (str(tmp_path / "quota"), str(tmp_path / "period"))
    )
    monkeypatch.setattr(scheduler, "_cpus", lambda: list(range(64)))
    monkeypatch.setattr(scheduler, "_usable_cpus", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        scheduler.set_threads()
        assert scheduler.decode_workers() == 3
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


@linux_affinity
def test_a_process_confined_to_one_cpu_gets_one_unpinned_worker(zarr_writer):
    """Under ``taskset`` or a cgroup cpuset: as many workers as CPUs allowed, not as the
    machine has, and reads still work."""
    import numpy as np

    data = np.arange(4 * 64 * 64, dtype="u2").reshape(4, 64, 64)
    w = zarr_writer(data, chunks=(1, 32, 32))
    cpu = min(os.sched_getaffinity(0))
    script = (
        "import os, sys, numpy as np, zarrfs\n"
        f"os.sched_setaffinity(0, {{{cpu}}})\n"
        "from zarrfs.engine import scheduler\n"
        "assert scheduler.decode_workers() == 1, scheduler.decode_workers()\n"
        "arr = zarrfs.open(sys.argv[1])['array']\n"
        "print(int(np.asarray(arr[...], dtype='u8').sum()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(w.root)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == int(data.astype("u8").sum())


@linux_affinity
def test_a_confined_thread_starting_the_pool_does_not_confine_it():
    """The first read may come from a thread the program keeps on one CPU; the pool still
    gets one worker per CPU of the process."""
    cpus = os.sched_getaffinity(0)
    if len(cpus) < 2:
        pytest.skip("one CPU: nothing to spread")
    script = (
        "import os, threading\n"
        "from zarrfs.engine import scheduler\n"
        "seen = []\n"
        "def confined():\n"
        f"    os.sched_setaffinity(0, {{{min(cpus)}}})\n"
        "    seen.append(scheduler.decode_workers())\n"
        "    seen.append(scheduler.run_decode(lambda: os.sched_getaffinity(0)).result(30))\n"
        "t = threading.Thread(target=confined); t.start(); t.join()\n"
        "print(seen[0], len(seen[1]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(len(cpus)), "1"]


def test_cancel_all_reads_ends_reads_waiting_for_a_slow_store(zarr_writer, http_server):
    """``engine.cancel_all_reads()`` (the mount on SIGTERM): a read waiting for a store that
    answers after 30 s ends at once with ReadCancelled, and so does every later read; a
    cached chunk still reads. In a child process: it cannot be undone."""
    import numpy as np

    data = np.arange(8 * 64, dtype="i4").reshape(8, 64)
    w = zarr_writer(data, chunks=(1, 64))
    server = http_server(w.root)
    script = (
        "import sys, threading, time, zarrfs, zarrfs.engine as engine\n"
        "arr = zarrfs.open(sys.argv[1])['array']\n"
        "arr[0]\n"
        "assert arr[0].tolist() == list(range(64))  # read a second time: kept\n"
        "print('opened', flush=True)\n"
        "sys.stdin.readline()  # the server is slow from now on\n"
        "outcome = {}\n"
        "def read():\n"
        "    try:\n"
        "        arr[5]\n"
        "    except engine.ReadCancelled as error:\n"
        "        outcome['error'] = error\n"
        "reader = threading.Thread(target=read)\n"
        "reader.start()\n"
        "time.sleep(0.5)\n"
        "engine.cancel_all_reads()\n"
        "reader.join(10)\n"
        "assert not reader.is_alive() and 'error' in outcome, outcome\n"
        "try:\n"
        "    arr[6]\n"
        "except engine.ReadCancelled:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('a read after cancel_all_reads went on')\n"
        "assert arr[0].tolist() == list(range(64))\n"
        "print('ok', flush=True)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, server.url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "opened", child.stderr.read()
        server.latency = 30.0
        child.stdin.write("go\n")
        child.stdin.flush()
        out, err = child.communicate(timeout=20)  # far less than the store's 30 s
    finally:
        child.kill()
        server.latency = 0.0
    assert child.returncode == 0, err
    assert out.strip() == "ok"


def test_a_waiting_caller_runs_its_own_queued_work():
    """``help`` runs on the calling thread the queued work of the futures it is given, in
    turn, and leaves everything else (work started by a worker, other callers' work) alone;
    a failure goes to its future, as from a worker."""
    pool = scheduler.PriorityPool(1, "test-help")
    started, release = threading.Event(), threading.Event()
    ran: dict[str, int] = {}

    def job(name, fail=False):
        def run():
            ran[name] = threading.get_ident()
            if fail:
                raise ValueError(name)
            return name

        return run

    def blocker():
        started.set()
        release.wait(10)
        return "blocker"

    try:
        busy = pool.submit(blocker)
        assert started.wait(10)  # the one worker is busy: what follows stays queued
        mine = [pool.submit(job("a")), pool.submit(job("b", fail=True)), pool.submit(job("c"))]
        other = pool.submit(job("other"))
        pool.help([busy, *mine])
        assert [ran[n] for n in "abc"] == [threading.get_ident()] * 3
        assert "other" not in ran and not other.done() and not busy.done()
        assert mine[0].result() == "a" and mine[2].result() == "c"
        with pytest.raises(ValueError, match="b"):
            mine[1].result()
        release.set()
        assert busy.result(10) == "blocker" and other.result(10) == "other"
        assert ran["other"] != threading.get_ident()
    finally:
        release.set()
        pool.close()


def test_a_waiting_caller_never_gets_ahead_of_more_urgent_work():
    """A prefetch's caller leaves its queued work to the workers while visible work waits."""
    pool = scheduler.PriorityPool(1, "test-help-urgent")
    started, release = threading.Event(), threading.Event()

    def blocker():
        started.set()
        release.wait(10)

    try:
        pool.submit(blocker)
        assert started.wait(10)
        urgent = pool.submit(lambda: threading.get_ident(), scheduler.PRIORITY_VISIBLE)
        later = pool.submit(lambda: threading.get_ident(), scheduler.PRIORITY_PREFETCH)
        pool.help([later])
        assert not later.done() and not urgent.done()
        release.set()
        assert urgent.result(10) != threading.get_ident()
        assert later.result(10) != threading.get_ident()
    finally:
        release.set()
        pool.close()


def test_one_read_decodes_on_threads_chosen_from_the_work(threads, monkeypatch):
    """A read decodes on at most the CPUs the process may use, and on fewer for small chunks,
    whose Python holds the GIL about as long as their codec runs: a bigger pool never puts
    one read on more threads (no convoy on the GIL)."""
    monkeypatch.setattr(scheduler, "_usable_cpus", 2)
    scheduler.set_threads(decode=16)
    assert scheduler.decode_workers() == 16
    assert scheduler.decode_parallelism(4 << 10) == 1  # 4 KiB chunks: one thread
    assert scheduler.decode_parallelism(32 << 10) == 2
    assert scheduler.decode_parallelism(512 << 10) == 2  # not 16: two CPUs
    assert scheduler.decode_parallelism(32 << 10, compiled=True) == 2  # two CPUs still
    assert scheduler.decode_parallelism(8 << 10, compiled=True) == 2  # (in Python: one)
    assert scheduler.decode_parallelism(4 << 10, compiled=True) == 1
    monkeypatch.setattr(scheduler, "_usable_cpus", 64)
    assert scheduler.decode_parallelism(512 << 10) == 16  # 1 + 512 / 32 = 17, 16 workers
    assert scheduler.decode_parallelism(64 << 10) == 3
    # chunks the compiled loop decodes hold the GIL a tenth of the time: one thread per 8 KiB
    assert scheduler.decode_parallelism(32 << 10, compiled=True) == 5
    assert scheduler.decode_parallelism(4 << 10, compiled=True) == 1
    assert scheduler.decode_parallelism(512 << 10, compiled=True) == 16
    scheduler.set_threads(decode=1)
    assert scheduler.decode_parallelism(512 << 10) == 1
    assert scheduler.decode_parallelism(32 << 10, compiled=True) == 1


def test_a_reads_tasks_run_within_its_lanes_whatever_the_pool(threads):
    """A 16-worker pool runs at most ``Lanes.limit`` of one read's tasks at once (the rest
    wait queued, then run as lanes free up), while another read's tasks run beside them."""
    pool = scheduler.PriorityPool(16, "test-lanes")
    lock = threading.Lock()
    running: dict[str, int] = {"a": 0, "b": 0}
    most: dict[str, int] = {"a": 0, "b": 0}
    both = threading.Event()

    def task(read):
        def run():
            with lock:
                running[read] += 1
                most[read] = max(most[read], running[read])
                if running["a"] and running["b"]:
                    both.set()
            both.wait(5)  # (every task overlaps the other read's, so the limit is tested)
            with lock:
                running[read] -= 1
            return read

        return run

    try:
        lanes_a, lanes_b = scheduler.Lanes(2), scheduler.Lanes(1)
        futures = [pool.submit(task("a"), lanes=lanes_a) for _ in range(12)]
        futures += [pool.submit(task("b"), lanes=lanes_b) for _ in range(4)]
        pool.help(futures[:12])  # the caller helps within the same lanes
        assert sorted(f.result(30) for f in futures) == ["a"] * 12 + ["b"] * 4
        assert most == {"a": 2, "b": 1}
        for _ in range(500):  # (a lane is freed just after its task's result is set)
            if lanes_a.running == lanes_b.running == 0:
                break
            threading.Event().wait(0.01)
        assert lanes_a.running == lanes_b.running == 0
    finally:
        both.set()
        pool.close()


def test_a_big_pool_wakes_the_worker_that_waited_least():
    """Work that comes one task at a time runs on the same few workers of a 16-worker pool,
    not on each in turn: the worker woken is the last to have gone idle, with its stack,
    caches and allocator arena warm (woken in turn, a 256 x 256 window of 512 KiB chunks
    read 1.1-1.2x as slowly with 16 workers as with 2). Pinned workers are woken in turn."""
    for pinned, most in ((False, 3), (True, 16)):
        pool = scheduler.PriorityPool(16, "test-lifo", pinned=pinned)
        try:
            idents = [pool.submit(threading.get_ident).result(10) for _ in range(48)]
            # (a worker setting its result goes idle a moment later: the next task may wake
            # the one before it)
            if pinned:
                assert len(set(idents)) == most
            else:
                assert len(set(idents)) <= most
        finally:
            pool.close()


def test_a_closed_pool_lets_its_idle_workers_end():
    """``close`` ends workers waiting for work, once the work queued is done."""
    pool = scheduler.PriorityPool(4, "test-close")
    assert pool.submit(lambda: 1).result(10) == 1
    pool.close()
    for t in pool._threads:
        t.join(10)
    assert not any(t.is_alive() for t in pool._threads)


def _most_tasks_at_once(
    where,
    monkeypatch,
    *,
    cpus: int,
    expect: int,
    loop: bool = True,
    endian: str = "little",
    told: bool = False,
) -> tuple[int, int]:
    """One read of a plane of 32 KiB chunks on a 16-worker pool in a process that may use
    ``cpus`` CPUs, on the Python pipeline (checked against the data zarr-python wrote): the
    most of its tasks that ran at once, and the batches the compiled loop decoded. Each task
    waits (at most 2 s) until ``expect`` ran at once, so a count below it is no accident of
    timing, then 10 ms, long enough for any other free lane to start one. ``told``: a read
    told of each chunk as it lands (the viewer's)."""
    import numpy as np
    import zarr
    import zarr.codecs as zc

    import zarrfs
    import zarrfs.engine as engine
    from zarrfs.engine import reader

    data = np.arange(8 * 256 * 256, dtype="<u2").reshape(8, 256, 256)
    where.mkdir()
    zarr.create_array(
        str(where / "a.zarr"),
        data=data,
        chunks=(1, 128, 128),
        serializer=zc.BytesCodec(endian=endian),
        compressors=zc.ZstdCodec(),
    )
    lock = threading.Condition()
    running, most, batches = [0], [0], [0]
    original, original_run = reader.ArrayReader.run_task, chunkloop.run

    def counted(self, task):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            lock.notify_all()
            lock.wait_for(lambda: most[0] >= expect, timeout=2)
        try:
            threading.Event().wait(0.01)  # long enough for every free lane to start one
            return original(self, task)
        finally:
            with lock:
                running[0] -= 1

    def run(*args, **kwargs):
        batches[0] += 1
        return original_run(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(scheduler, "_usable_cpus", cpus)
        m.setattr(reader, "_BATCH_BYTES", 64 << 10)  # 2 chunks a task: 16 tasks
        m.setattr(reader, "_INLINE_BYTES", 0)
        m.setattr(reader.ArrayReader, "run_task", counted)
        m.setattr(chunkloop, "run", run)
        m.setattr(chunkloop, "_enabled", loop)  # (for the arrays opened from now on)
        m.setattr(native_path._switch, "enabled", False)
        scheduler.set_threads(decode=16)
        engine.clear_caches()
        arr = zarrfs.open(str(where / "a.zarr"))
        if told:
            events = []
            future = arr.submit(..., on_chunk=events.append)
            np.testing.assert_array_equal(future.result(timeout=60), data)
            assert len(events) == 8 * 4
        else:
            np.testing.assert_array_equal(arr[...], data)
    return most[0], batches[0]


def test_a_big_read_never_takes_more_threads_than_its_work_wants(threads, tmp_path, monkeypatch):
    """A read of many tasks of 32 KiB chunks on a 16-worker pool decodes on
    ``decode_parallelism`` threads at once (2 on 2 CPUs), not 16: no convoy on the GIL."""
    assert _most_tasks_at_once(tmp_path / "a", monkeypatch, cpus=2, expect=2)[0] == 2


@pytest.mark.skipif(not chunkloop.built(), reason="the compiled chunk loop is not built")
def test_a_read_in_the_compiled_loop_takes_the_cores_its_work_can_use(
    threads, tmp_path, monkeypatch
):
    """Where the CPUs are there, a read whose chunks the compiled loop decodes (the GIL let go
    a batch at a time) runs 5 tasks of 32 KiB chunks at once, not the 2 of chunks decoded in
    Python: a 64-core machine no longer reads such a plane on two of its cores. Chunks the
    loop sends the Python way (a big-endian array's), and a read told of each chunk (the
    viewer's: Python a chunk), keep the 2 of Python's chunks."""
    most, batches = _most_tasks_at_once(tmp_path / "loop", monkeypatch, cpus=64, expect=5)
    assert (most, batches > 0) == (5, True)
    most, batches = _most_tasks_at_once(
        tmp_path / "python", monkeypatch, cpus=64, expect=2, loop=False
    )
    assert (most, batches) == (2, 0)
    most, _ = _most_tasks_at_once(tmp_path / "big", monkeypatch, cpus=64, expect=2, endian="big")
    assert most == 2
    most, _ = _most_tasks_at_once(tmp_path / "told", monkeypatch, cpus=64, expect=2, told=True)
    assert most == 2


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_a_finished_background_read_is_not_kept_alive_by_an_idle_worker(tmp_path, native):
    """A background read's output is the caller's: once the caller drops it, it is freed,
    not held by the worker that ran the read until that worker's next task (a prefetch's
    outputs, 32 MB a 4096 x 4096 plane, were held by every idle worker)."""
    data = np.arange(128 * 128, dtype="u2").reshape(128, 128)
    zarr.create_array(str(tmp_path / "a.zarr"), data=data, chunks=(32, 32), fill_value=0)
    native_path.set_native(native)
    try:
        arr = zarrfs.open(str(tmp_path / "a.zarr"))
        outputs = []
        for k in range(4):
            out = arr.submit((slice(k, None),)).result(timeout=30)
            assert (out == data[k:]).all()
            outputs.append(weakref.ref(out))
            del out
        deadline = time.monotonic() + 10  # the worker lets go once it is back in its loop
        while any(o() is not None for o in outputs) and time.monotonic() < deadline:
            gc.collect()
            time.sleep(0.01)
        assert [o() is None for o in outputs] == [True] * len(outputs)
    finally:
        native_path.set_native(True)
