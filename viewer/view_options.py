"""How the first array shown should look, from the command line (``zarrfs view --channels
DAPI,GFP --labels nuclei --colormap viridis --ortho``): what a figure made with
``--screenshot`` needs, applied once the array is on screen. A name that does not fit the
array (no such channel or label image) is said in the message bar, as a bad ``--index`` is.
"""

from __future__ import annotations

from dataclasses import dataclass

import zarrfs.engine as engine

from . import messages


@dataclass(frozen=True)
class ViewOptions:
    channels: tuple[str, ...] | None = None  # channel names or indices to show; None: as stored
    labels: str | None = None  # a label image to draw over the image
    colormap: str | None = None
    ortho: bool = False

    @property
    def empty(self) -> bool:
        return self == ViewOptions()


def apply(view, node_path: str, options: ViewOptions | None) -> None:
    """Apply ``options`` to the image view that has just shown ``node_path``."""
    if options is None or options.empty or view.state is None:
        return
    if options.colormap:
        view.cf_tools.choose_colormap(options.colormap)
    if options.channels is not None:
        _channels(view, node_path, options.channels)
    if options.labels:
        names = view.labels_panel.combo
        if names.findData(options.labels) < 0:
            _say(view, node_path, f"--labels {options.labels}: no such label image")
        else:
            view.labels_panel.choose(options.labels)
    if options.ortho:
        view.set_ortho(True)


def _channels(view, node_path: str, wanted: tuple[str, ...]) -> None:
    panel = view.channel_panel
    if panel.state is None:
        _say(view, node_path, "--channels: this array has no channel axis")
        return
    labels = [c.label for c in panel.state.channels]
    known = {name.casefold() for name in labels} | {str(k) for k in range(len(labels))}
    unknown = [name for name in wanted if name.casefold() not in known]
    if unknown:
        _say(view, node_path, f"--channels {unknown[0]}: no such channel ({', '.join(labels)})")
    chosen = {name.casefold() for name in wanted}
    for k, label in enumerate(labels):
        panel.set_visible_channel(k, label.casefold() in chosen or str(k) in chosen)


def _say(view, node_path: str, text: str) -> None:
    view.message.emit(messages.describe(engine.SelectionError(text), node=node_path))
