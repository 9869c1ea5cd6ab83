"""``--index`` on the image view: integers placed at once, dates and coordinate values once the
axis's coordinates are read (the nearest element); a composite's channel axis, which has no
slider, takes none. A value that does not fit is said in the message bar, and the plane the
image opens on stays."""

from __future__ import annotations

import zarrfs.engine as engine

from . import coordinates, messages


def apply(view, node_path: str, indices: list, channels) -> dict[int, str]:
    """Place ``indices`` (ints and texts, from ``viewer/cli.parse_indices``) on ``view.state``;
    returns the texts to place once the coordinates are read, ``{axis: text}``."""
    skip = (channels.axis,) if channels is not None and channels.composite else ()
    try:
        return view.state.set_indices(indices, skip=skip)
    except IndexError as exc:  # --index does not fit this array: say so, show plane 0
        _say(view, node_path, str(exc))
        return {}


def placer(view, node_path: str, texts: dict[int, str]):
    """The callback placing ``texts`` once the coordinates of ``view.state`` are read (None
    when there are none to place)."""
    if not texts:
        return None
    state = view.state

    def place(found) -> None:
        for axis, index in coordinates.place(texts, found, state.dimension_names).items():
            if isinstance(index, str):
                _say(view, node_path, index)
            elif view.state is state and state.set_index(axis, index):
                view.axes.show_index(axis, index)
                view.refresh()

    return place


def _say(view, node_path: str, text: str) -> None:
    view.message.emit(messages.describe(engine.SelectionError(text), node=node_path))
