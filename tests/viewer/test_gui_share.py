"""The viewer leaves a CPU to its GUI thread: one decode worker fewer than the CPUs the
process may use (its affinity, within its cgroup's quota), never fewer than one, and the
user's ``ZARRFS_DECODE_THREADS`` stands."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("cpus", "environ", "workers"),
    [
        (8, {}, 7),
        (2, {}, 1),
        (1, {}, 1),  # one CPU: still one worker
        (8, {"ZARRFS_DECODE_THREADS": "8"}, None),  # the user's number
    ],
)
def test_decode_workers_leave_one_cpu(monkeypatch, cpus, environ, workers):
    import zarrfs.engine as engine
    from zarrfs.viewer import gui_share

    monkeypatch.setattr(engine, "usable_cpus", lambda: cpus)
    assert gui_share.decode_workers(environ) == workers


def test_a_cgroup_quota_counts_as_the_engine_counts_it(monkeypatch):
    """A container's quota of 4 CPUs on a 16-CPU machine: three workers."""
    from zarrfs.engine import scheduler
    from zarrfs.viewer import gui_share

    monkeypatch.setattr(scheduler, "_usable_cpus", None)  # asked once a process: ask again
    monkeypatch.setattr(scheduler, "_cpus", lambda: list(range(16)))
    monkeypatch.setattr(scheduler, "_cpu_quota", lambda: 4)
    assert gui_share.decode_workers({}) == 3


def test_the_engine_is_asked_for_them(monkeypatch):
    import zarrfs.engine as engine
    from zarrfs.viewer import gui_share

    asked = []
    monkeypatch.delenv("ZARRFS_DECODE_THREADS", raising=False)
    monkeypatch.setattr(engine, "usable_cpus", lambda: 4)
    monkeypatch.setattr(engine, "set_threads", lambda **kwargs: asked.append(kwargs))
    gui_share.leave_a_cpu_to_the_gui_thread()
    assert asked == [{"decode": 3}]
    monkeypatch.setenv("ZARRFS_DECODE_THREADS", "2")
    gui_share.leave_a_cpu_to_the_gui_thread()
    assert asked == [{"decode": 3}]  # left as the user set it
