"""The import graph of the house: no circle between the rooms, the mount daemon and the shared
storage options free of every command-line module.

Read from the source with ``ast`` (imports inside functions count too: they run as soon as the
function does), so the test sees what a lazy import hides from ``sys.modules``. The engine is
one node, seen through its door: its inner modules are its own business.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENGINE = "zarrfs.engine"
CLI_MODULES = {"zarrfs.cli", "zarrfs.cli_get", "zarrfs.fuse.cli", "zarrfs.viewer.cli"}


def _modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package) for ``zarrfs`` and ``zarrfs.viewer`` (``viewer/``)."""
    found = {}
    for package, folder in (("zarrfs", "zarrfs"), ("zarrfs.viewer", "viewer")):
        # (an extension module's C source names it: it imports no project module)
        for path in [*(REPO / folder).rglob("*.py"), *(REPO / folder).rglob("*.c")]:
            parts = package.split(".") + list(path.relative_to(REPO / folder).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _node(name: str, collapse: bool = True) -> str:
    return ENGINE if collapse and name.startswith(ENGINE + ".") else name


def _imported(name: str, path: Path, is_package: bool, known, collapse: bool) -> set[str]:
    """The project modules ``name`` imports, anywhere in its source."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    if path.suffix != ".py":
        return found
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target:
                found.add(_node(target, collapse))
    return found - {_node(name, collapse)}


def import_graph(collapse: bool = True) -> dict[str, set[str]]:
    """Module -> the project modules it imports; the engine one node unless not ``collapse``."""
    known = _modules()
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in known.items():
        node = _node(name, collapse)
        graph.setdefault(node, set()).update(_imported(name, path, is_package, known, collapse))
    return graph


def _reachable(graph, start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for child in graph.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def _cycle(graph) -> list[str] | None:
    """One import circle as a path, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> list[str] | None:
        state[name] = 1
        for child in sorted(graph.get(name, ())):
            if state.get(child) == 1:
                return path[path.index(child) :] + [child]
            if child not in state and (found := visit(child, path + [child])):
                return found
        state[name] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_no_import_circle():
    assert _cycle(import_graph()) is None, " -> ".join(_cycle(import_graph()))


def test_no_import_circle_inside_the_engine():
    """Its modules import each other in one direction too: no import inside a function to
    dodge a circle (the codecs sit on ``codec_registry``, the size checks on ``frame_headers``)."""
    graph = {k: v for k, v in import_graph(collapse=False).items() if k.startswith(ENGINE)}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_the_mount_daemon_imports_no_command_line_module():
    graph = import_graph()
    assert "zarrfs.fuse.cli" in graph and "zarrfs.fuse.daemon" in graph
    assert not _reachable(graph, "zarrfs.fuse.daemon") & CLI_MODULES


def test_storage_options_sit_below_every_room():
    """The shared rules import nothing of the project: the engine, the mount and the viewer may
    all use them."""
    assert _reachable(import_graph(), "zarrfs.storage_options") == set()


def test_the_graph_sees_lazy_imports():
    """``zarrfs.cli`` imports the mount's and the viewer's parsers inside a function."""
    graph = import_graph()
    assert {"zarrfs.fuse.cli", "zarrfs.viewer.cli", "zarrfs.storage_options"} <= graph["zarrfs.cli"]
