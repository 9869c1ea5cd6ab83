"""The viewer leaves a CPU to its GUI thread: one decode worker fewer than the CPUs the
process may use (its affinity, within its cgroup's quota), never fewer than one, and the
user's ``ZARRFS_DECODE_THREADS`` stands."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("affinity", "quota", "environ", "workers"),
    [
        (8, None, {}, 7),
        (2, None, {}, 1),
        (1, None, {}, 1),  # one CPU: still one worker
        (16, 4, {}, 3),  # a container's quota of 4 CPUs on a 16-CPU machine
        (8, None, {"ZARRFS_DECODE_THREADS": "8"}, None),  # the user's number
    ],
)
def test_decode_workers_leave_one_cpu(monkeypatch, affinity, quota, environ, workers):
    from zarrfs.viewer import gui_share

    monkeypatch.setattr(gui_share.os, "sched_getaffinity", lambda _pid: set(range(affinity)))
    monkeypatch.setattr(gui_share, "_cpu_quota", lambda: quota)
    assert gui_share.decode_workers(environ) == workers


def test_the_engine_is_asked_for_them(monkeypatch):
    import zarrfs.engine as engine
    from zarrfs.viewer import gui_share

    asked = []
    monkeypatch.delenv("ZARRFS_DECODE_THREADS", raising=False)
    monkeypatch.setattr(gui_share, "usable_cpus", lambda: 4)
    monkeypatch.setattr(engine, "set_threads", lambda **kwargs: asked.append(kwargs))
    gui_share.leave_a_cpu_to_the_gui_thread()
    assert asked == [{"decode": 3}]
    monkeypatch.setenv("ZARRFS_DECODE_THREADS", "2")
    gui_share.leave_a_cpu_to_the_gui_thread()
    assert asked == [{"decode": 3}]  # left as the user set it


def test_a_cgroup_quota_is_read_as_the_engine_reads_it(tmp_path, monkeypatch):
    from zarrfs.viewer import gui_share

    cpu_max = tmp_path / "cpu.max"
    monkeypatch.setattr(gui_share, "_CGROUP_V2", str(cpu_max))
    for text, quota in [("250000 100000\n", 3), ("max 100000\n", None), ("50000 100000", 1)]:
        cpu_max.write_text(text)
        assert gui_share._cpu_quota() == quota
