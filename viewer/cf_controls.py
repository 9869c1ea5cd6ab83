"""The image view's controls for a CF variable, and what they change in the view.

A "Raw" check box (shown for a variable whose decoding changes its values: the stored numbers
instead of the decoded ones), "Lock aspect" (1:1 for maps and ordinary images, free by default
when an axis is time or vertical), and "Centre at" with its value (levels symmetric around it;
on at 0 when a diverging colormap is picked). The view asks ``frame_axes`` whenever it shows new
axes; the colour bar (the histogram's axis) is labelled with the long name and units.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from . import transforms
from .cf_display import CFValues, CFView, plane_title
from .view_state import DIVERGING


class CFControls(QObject):
    """Owns the check boxes and applies them to ``view`` (an ``ImageView``): ``bar`` (Raw,
    Lock aspect) goes in the toolbar, ``centre_box`` under the colour bar (the toolbar must
    fit a 900-pixel window)."""

    def __init__(self, view):
        super().__init__(view)
        self.view = view
        self.cf: CFView | None = None
        self._framed: tuple | None = None  # (state, y, x) whose default aspect is set
        self.raw_check = QCheckBox("Raw")
        self.raw_check.setToolTip("Show the stored values, not the CF-decoded ones")
        self.aspect_check = QCheckBox("Lock aspect")
        self.aspect_check.setToolTip("Draw an element as wide as it is tall")
        self.aspect_check.setChecked(True)
        self.centre_check = QCheckBox("Centre at")
        self.centre_check.setToolTip("Contrast symmetric around this value (anomalies)")
        self.centre_spin = QDoubleSpinBox()
        self.centre_spin.setRange(-1e12, 1e12)
        self.centre_spin.setDecimals(3)
        self.centre_spin.setMaximumWidth(100)  # no wider than the colour bar above
        self.centre_spin.setEnabled(False)
        self.bar = QWidget()
        row = QHBoxLayout(self.bar)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.raw_check)
        row.addWidget(self.aspect_check)
        self.centre_box = QWidget()
        column = QVBoxLayout(self.centre_box)
        column.setContentsMargins(2, 0, 2, 4)
        column.addWidget(self.centre_check)
        column.addWidget(self.centre_spin)
        self.raw_check.setVisible(False)
        self.title = QLabel()  # over the plane: long name, units, the plane's date and level
        self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.title.setStyleSheet("font-weight: bold; padding: 2px;")
        self.title.setVisible(False)
        self.raw_check.toggled.connect(self._raw_toggled)
        self.aspect_check.toggled.connect(self._aspect_toggled)
        self.centre_check.toggled.connect(self._centre_changed)
        self.centre_spin.valueChanged.connect(self._centre_changed)
        view.colormap_combo.currentTextChanged.connect(self._colormap_changed)
        self._colormap_chosen = False  # the user picked one: kept from array to array
        view.colormap_combo.activated.connect(self._colormap_picked)

    @property
    def raw(self) -> bool:
        return not self.raw_check.isHidden() and self.raw_check.isChecked()

    def set_view(self, cf: CFView | None) -> None:
        """A new array (``cf``: its CF view, None for none): decoded values, its label."""
        self.cf, self._framed = cf, None
        self.raw_check.blockSignals(True)
        self.raw_check.setChecked(False)
        self.raw_check.blockSignals(False)
        self.raw_check.setVisible(cf is not None and cf.has_raw)
        self._apply_values()
        if not self._colormap_chosen:
            self.view.colormap_combo.setCurrentText(default_colormap(cf))
        self.show_title()
        self.centre_box.setVisible(self.centres() and not self.view.controller.composite)
        if self.view.state is not None:
            self.view.state.centre = self._centre()

    def _apply_values(self) -> None:
        """Decoded (or raw) values in the main view's and the orthogonal views' controllers."""
        cf = self.cf
        values = CFValues(cf.variable, self.raw) if cf is not None and cf.decodes else None
        ortho = self.view.ortho
        for controller in (self.view.controller, ortho.xz.controller, ortho.yz.controller):
            controller.cf = values
        self.view.histogram.item.axis.setLabel(cf.label(self.raw) if cf is not None else "")

    def frame_axes(self) -> bool:
        """Orient the view for the axes on screen (a map north up) and say whether its aspect
        is locked: each new pair of axes starts at its default, until the user toggles it."""
        state = self.view.state
        if state is None:
            return self.aspect_check.isChecked()
        key = (id(state), state.y_axis, state.x_axis)
        if key != self._framed:
            self._framed = key
            cf = self.cf
            self.view.view_box.invertY(not (cf is not None and cf.north_up(state.y_axis)))
            locked = cf is None or cf.lock_aspect(state.y_axis, state.x_axis)
            self.aspect_check.blockSignals(True)
            self.aspect_check.setChecked(locked)
            self.aspect_check.blockSignals(False)
        return self.aspect_check.isChecked()

    def value_text(self, value) -> str:
        """The readout of a stored value: decoded with its units for a CF variable."""
        cf = self.cf
        if cf is None or not (cf.decodes or cf.variable.units):
            return transforms.format_value(value)
        return CFValues(cf.variable, self.raw).value_text(value)

    def _raw_toggled(self, _on: bool) -> None:
        self._apply_values()
        self.view.ortho.forget()
        self.view.refresh(force=True)

    def _aspect_toggled(self, _on: bool) -> None:
        self.view._true_aspect()
        self.view.fit()

    def _centre(self) -> float | None:
        return self.centre_spin.value() if self.centre_check.isChecked() else None

    def _centre_changed(self, *_args) -> None:
        self.centre_spin.setEnabled(self.centre_check.isChecked())
        state = self.view.state
        if state is not None:
            state.centre = self._centre()
            self.view.controller.redraw()
            self.view.ortho.redraw()

    def centres(self) -> bool:
        """Whether "Centre at" has a use: for a CF variable (an anomaly field), or once a
        diverging colormap is picked."""
        cf = self.cf
        var = cf.variable if cf is not None else None
        is_cf = var is not None and bool(var.units or var.long_name or var.standard_name)
        return is_cf or self.view.colormap_combo.currentText() in DIVERGING

    def show_title(self, *_args) -> None:
        """Title the plane on screen (a CF variable's; hidden for other arrays)."""
        cf, state = self.cf, self.view.state
        text = plane_title(cf.variable, state, self.view.image_axes.coordinates) if cf else ""
        self.title.setText(text)
        self.title.setVisible(bool(text))

    def choose_colormap(self, name: str) -> None:
        """Use colormap ``name`` from now on, as a user's pick is (``--colormap``)."""
        self._colormap_chosen = True
        self.view.colormap_combo.setCurrentText(name)

    def _colormap_picked(self, _index: int) -> None:
        self._colormap_chosen = True

    def _colormap_changed(self, name: str) -> None:
        """A diverging colormap centres its levels (at the value set, 0 at first)."""
        self.centre_check.setChecked(name in DIVERGING)
        composite = self.view.controller.composite
        self.centre_box.setVisible(not composite and self.centres())


def default_colormap(cf: CFView | None) -> str:
    """A perceptual map (viridis) for a physical quantity (a CF variable with units that is no
    time), as Panoply and ncview start; grey for raw arrays (images, counts, ids)."""
    var = cf.variable if cf is not None else None
    physical = var is not None and var.time is None and var.units not in (None, "", "1")
    return "viridis" if physical else "grey"
