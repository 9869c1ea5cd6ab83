"""The cursor readout of the image view: the element under the cursor along every axis (with
its physical position and its coordinates), and its value (each channel's in a composite, a
CF variable's decoded value and units), and the label under it."""

from __future__ import annotations

from . import coordinates, transforms


def _physical_text(view, axis: int, index: int) -> str:
    text = view.physical.describe(axis, index) if view.physical is not None else None
    return f" ({text})" if text else ""


def describe_position(view, y: float, x: float) -> str:
    """The readout for level-0 position (y, x): coordinates along every axis and the value."""
    state = view.state
    index = list(state.indices)
    index[state.y_axis], index[state.x_axis] = int(y), int(x)
    sample = view.controller.sample_at(y, x)
    if sample is not None:  # zoomed out: name the element whose value is shown
        index[state.y_axis], index[state.x_axis] = sample
    composite = view.controller.composite
    channels = view.controller.channels
    coords = ", ".join(
        f"{state.axis_label(a)}={i}" + _physical_text(view, a, i)
        for a, i in enumerate(index)
        if not (composite and a == channels.axis)
    )
    value = view.controller.value_at(y, x)
    if value is None:
        text = "loading…"
    elif composite:
        text = "  ".join(
            f"{c.label} {transforms.format_value(v)}"
            for c, v in zip(channels.channels, value, strict=True)
        )
    else:
        text = view.cf_tools.value_text(value)
    label = view.labels.label_at(y, x)
    if label is not None:
        value, properties = label
        text += f"  {view.labels.source.name} {value}"
        text += "".join(f", {k}: {v}" for k, v in properties.items())
    request = view.controller.request
    if request is not None and request.level > 0:
        text += f"  (level {request.level})"
    where = coordinates.readout(view.image_axes.coordinates, index, view.image_axes.auxiliary)
    return f"[{coords}]  {where + '  ' if where else ''}{text}"
