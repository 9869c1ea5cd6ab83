"""The viewer's state as plain Python (STYLE rule 10): no Qt, so it is testable on its own.

Widgets read and change a :class:`ViewState`; the image controller turns it into an immutable
request (see ``tiles.PlaneRequest``) tagged with the state's ``generation``. Any change that makes
in-flight work useless bumps the generation, and results carrying an older one are dropped.

Generations come from one process-wide counter, not one per state: each array shown gets a new
state, and late results of the previous array must never carry a generation the new one uses.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

#: perceptually uniform sequential maps first (pyqtgraph bundles colorcet's CET maps: L3 black-
#: red-yellow-white, L18 white-yellow-red), then its diverging ones for anomalies (D1 and D1A
#: blue-white-red, D4 blue-black-red, D3 green-white-red), which centre their levels at 0
COLORMAPS = (
    "grey",
    "viridis",
    "magma",
    "inferno",
    "plasma",
    "cividis",
    "turbo",
    "CET-L8",
    "CET-L3",
    "CET-L18",
    "CET-D1",
    "CET-D1A",
    "CET-D4",
    "CET-D3",
)
DIVERGING = ("CET-D1", "CET-D1A", "CET-D4", "CET-D3")
COMPLEX_MODES = ("magnitude", "phase", "real", "imag")

_generations = itertools.count(1)


def next_generation() -> int:
    """A generation no request has carried before (unique across states and arrays)."""
    return next(_generations)


@dataclass
class ViewState:
    """What the user looks at: which axes are displayed, where the sliders are, how it's drawn."""

    shape: tuple[int, ...]
    dimension_names: tuple[str, ...] = ()
    y_axis: int = 0
    x_axis: int = 1
    indices: list[int] = field(default_factory=list)
    slider_axis: int | None = None
    colormap: str = "grey"
    auto_levels: bool = True
    levels: tuple[float, float] | None = None
    centre: float | None = None  # levels symmetric around it (anomalies); None: as found
    complex_mode: str = "magnitude"
    field_name: str | None = None
    show_chunk_grid: bool = False
    generation: int = field(default_factory=next_generation)

    def __post_init__(self) -> None:
        ndim = len(self.shape)
        if not self.dimension_names or len(self.dimension_names) != ndim:
            self.dimension_names = tuple(f"dim_{i}" for i in range(ndim))
        self.dimension_names = tuple(
            name if name else f"dim_{i}" for i, name in enumerate(self.dimension_names)
        )
        if not self.indices:
            self.indices = [0] * ndim
        if ndim >= 2 and (self.y_axis, self.x_axis) == (0, 1):
            self.y_axis, self.x_axis = ndim - 2, ndim - 1
        self._fix_slider_axis()

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def slider_axes(self) -> list[int]:
        """The axes not displayed, each with a slider."""
        return [a for a in range(self.ndim) if a not in (self.y_axis, self.x_axis)]

    def bump(self) -> int:
        """Invalidate everything in flight; returns the new generation."""
        self.generation = next_generation()
        return self.generation

    def _fix_slider_axis(self) -> None:
        axes = self.slider_axes
        if self.slider_axis not in axes:
            self.slider_axis = axes[0] if axes else None

    def set_display_axes(self, y_axis: int, x_axis: int) -> bool:
        """Display ``y_axis`` down and ``x_axis`` across; swaps if the user picks the same axis."""
        if y_axis == x_axis:
            y_axis, x_axis = x_axis, self.y_axis if x_axis != self.y_axis else self.x_axis
        changed = (y_axis, x_axis) != (self.y_axis, self.x_axis)
        self.y_axis, self.x_axis = y_axis, x_axis
        self._fix_slider_axis()
        return changed

    def set_row_axis(self, axis: int) -> None:
        """Show only ``axis`` (as the rows of a table of records, whose fields are the columns)."""
        self.y_axis = self.x_axis = axis
        self._fix_slider_axis()

    def set_index(self, axis: int, value: int) -> bool:
        """Move the slider of ``axis``; clamped to the array. Returns whether it moved."""
        value = max(0, min(int(value), self.shape[axis] - 1))
        changed = self.indices[axis] != value
        self.indices[axis] = value
        if axis in self.slider_axes:
            self.slider_axis = axis
        return changed

    def step(self, delta: int) -> bool:
        """Move the active slider by ``delta`` (arrow keys, PageUp/PageDown)."""
        if self.slider_axis is None:
            return False
        return self.set_index(self.slider_axis, self.indices[self.slider_axis] + delta)

    def set_indices(self, values: list, skip: tuple[int, ...] = ()) -> dict[int, str]:
        """Set the slider positions from ``--index``: one value per slider axis but those in
        ``skip`` (a composite's channel axis, which has no slider), fewer leaving the rest
        where they are, or one per axis. Negative integers count from the end, as in NumPy.
        Texts (a date or a coordinate value, placed once the coordinates are read) are
        returned as ``{axis: text}``.

        Raises ``IndexError`` naming the axis and its size for a value outside it, and for
        more values than axes to place them on; nothing is changed then.
        """
        takers = [a for a in self.slider_axes if a not in skip]
        axes = list(range(self.ndim)) if len(values) == self.ndim else takers
        if len(values) > len(axes):
            names = ", ".join(f"'{self.dimension_names[a]}'" for a in takers)
            raise IndexError(
                f"--index has {len(values)} values, but only the axes with a slider "
                f"take one ({names or 'none'}), or every axis ({self.ndim})"
            )
        wanted, texts = {}, {}
        for axis, value in zip(axes, values, strict=False):
            if isinstance(value, str):
                texts[axis] = value
                continue
            size = self.shape[axis]
            if not -size <= value < size:
                raise IndexError(
                    f"--index {value} is outside axis '{self.dimension_names[axis]}' of size {size}"
                )
            wanted[axis] = value % size
        for axis, value in wanted.items():
            if axis in self.slider_axes:
                self.set_index(axis, value)
        return {axis: text for axis, text in texts.items() if axis in self.slider_axes}

    def plane_key(self) -> tuple:
        """Identifies the plane on screen (not the viewport): equal keys show the same data."""
        fixed = tuple(self.indices[a] for a in self.slider_axes)
        return (self.y_axis, self.x_axis, fixed, self.field_name, self.complex_mode)

    def axis_label(self, axis: int) -> str:
        return self.dimension_names[axis]
