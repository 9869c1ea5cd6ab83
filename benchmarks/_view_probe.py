"""``zarrfs view URL`` as a user runs it, reporting when its first composite pixels are painted.

Run by ``bench_viewer_composite.py`` in a fresh interpreter (``python _view_probe.py URL``): it
prints ``first_composite_pixels <epoch seconds> cpu <CPU seconds so far>`` the moment the image's controller has painted
pixels of a composite, then exits at once. The parent takes the time before starting the
process, so the figure counts everything from the command's start: the interpreter, every
import, the window, opening the store and reading the plane.

Nothing is imported ahead of the command: a finder wraps the controller's class when the viewer
itself imports its module, so the command's own import order is what is measured.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import time

_TARGET = "zarrfs.viewer.plane_controller"


def _watch(controller) -> None:
    def painted(_generation) -> None:
        loaded = controller.loaded is not None and controller.loaded.any()
        approx = controller.approx is not None and controller.approx.any()
        if controller.composite and (loaded or approx):
            cpu = sum(os.times()[:2])  # user + system, every thread of the process
            sys.stdout.write(f"first_composite_pixels {time.time():.6f} cpu {cpu:.3f}\n")
            sys.stdout.flush()
            if os.environ.get("VIEW_PROBE_QUIT"):  # leave through Qt's loop (for a profiler)
                from PySide6.QtWidgets import QApplication

                controller.painted.disconnect(painted)
                QApplication.instance().quit()
            else:
                os._exit(0)

    controller.painted.connect(painted)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != _TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        run = spec.loader.exec_module

        def exec_module(module) -> None:
            run(module)
            cls = module.PlaneController
            init = cls.__init__

            def __init__(self, *args, **kwargs):
                init(self, *args, **kwargs)
                _watch(self)

            cls.__init__ = __init__

        spec.loader.exec_module = exec_module
        return spec


def main() -> int:
    import importlib.util  # noqa: F401 (used by the finder)

    sys.meta_path.insert(0, _Finder())
    from zarrfs.cli import main as zarrfs_main

    return zarrfs_main(["view", *sys.argv[1:]])


if __name__ == "__main__":
    raise SystemExit(main())
