"""An ImageItem whose picture is coloured on a worker: the GUI thread only swaps it in.

pyqtgraph's ``ImageItem`` turns its values into a picture (levels, colour map, NaN made
transparent) in ``paint``, on the GUI thread: for the 1024 x 1024 float32 buffer of a
4096 x 4096 map on a 1400 x 900 window, about 20 ms of every redraw, and a plane is redrawn as
each of its tiles lands, on every slider step and on every move of the contrast. Here a change
of the values, the levels or the colour map asks a worker for a new picture
(``colouring.picture``); until it comes the previous one stays on screen, where it was drawn
(a zoom or a pan moves the item before the new picture is ready). One picture is made at a
time: changes that come meanwhile are gathered into the next one, made from the item as it
then is, so a picture of values the user has moved away from is never started, and the
pictures come back in the order they were asked for.

The histogram of the values is made on the worker with their picture, from a sample
(``contrast.found_levels``): ``getHistogram`` hands back the one of the picture on screen,
and ``histogram_ready`` says a new one is there (the colour bar then shows it), so the GUI
thread never looks at the whole plane for it. With automatic contrast (``auto``, a
``contrast.AutoLevels`` given with the values) the levels are found in the same sample, there
too: the picture is coloured with them, they become the item's levels when it is swapped in,
and ``levels_found`` says so first.

``image`` keeps the values (the readout and the tests read them);
``render()`` still colours synchronously, for whoever asks for the picture at once
(``settle``: the view grabbed into a PNG).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Signal
from PySide6.QtGui import QImage

from . import colouring, contrast
from .tasks import gui_handle, init_relay, post_to_handle

logger = logging.getLogger(__name__)

_FORMAT = QImage.Format.Format_ARGB32_Premultiplied  # what Qt paints without converting


class ColouredImageItem(pg.ImageItem):
    """``pg.ImageItem`` of 2-D values with levels, coloured by ``jobs`` (a ``submit(fn) ->
    Future`` pool; None: synchronously, as pyqtgraph does)."""

    coloured = Signal()  # a picture made on the worker is on screen (or was dropped)
    histogram_ready = Signal()  # the histogram of the values on screen changed
    levels_found = Signal(object)  # (low, high): automatic levels of the values on screen

    def __init__(self, *args, jobs: Callable | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        init_relay()
        self.jobs = jobs  # called for the pool: a lazily made one is found when first needed
        self._handle = gui_handle(self)
        self._colouring = False  # a picture is being made
        self._again = False  # the values, levels or colour map changed since it was asked
        self._shown: tuple[QImage, QRectF] | None = None  # the picture on screen, and where
        self._asked = 0  # pictures asked for, in order: each one's number
        self._asked_rect: QRectF | None = None  # where the last one asked for is drawn
        self._shown_number = 0  # the number of the one on screen (an older one is dropped)
        self._histogram: tuple = (None, None)  # of the values of the picture on screen
        #: automatic contrast (``contrast.AutoLevels``): levels found with each picture;
        #: None: the item's levels, as set
        self.auto = None

    @property
    def busy(self) -> bool:
        """A picture is being made (or asked for) for what changed."""
        return self._colouring or self._again

    def clear(self) -> None:
        """No values: no picture, and none of those being made will show."""
        self.prepareGeometryChange()
        self._shown, self._shown_number = None, self._asked + 1
        self._asked_rect = None
        self._histogram = (None, None)
        super().clear()

    def colourable(self) -> bool:
        image = self.image
        return (
            image is not None
            and image.ndim == 2
            and image.size > 0
            and (self.auto is not None or (self.levels is not None and np.ndim(self.levels) == 1))
        )

    def setLevels(self, levels, update: bool = True) -> None:
        """pyqtgraph's: levels set from outside (the colour bar dragged) are drawn as they are,
        not found again (``auto`` ends). But levels equal to those the item has change
        nothing (the colour bar sets the levels found with a picture back on it: no second
        picture)."""
        current = self.levels
        if (
            levels is not None
            and current is not None
            and np.ndim(levels) == 1
            and np.shape(current) == np.shape(levels)
            and np.array_equal(np.asarray(current, dtype=float), np.asarray(levels, dtype=float))
        ):
            return
        self.auto = None
        super().setLevels(levels, update)

    def render(self) -> None:
        """The picture now, on this thread (pyqtgraph's own for what is not 2-D levelled)."""
        if not self.colourable():
            self._shown = None
            super().render()
            return
        self._asked += 1
        self._asked_rect = rect = self._rect()
        made = _colour(self.image, self._levels(), self._table(), self.auto)
        self._show(self._asked, made, rect)
        self._renderRequired = False

    def colour(self) -> None:
        """Ask for the picture of new values (or of values moved, ``setRect``) now, not at the
        next paint: the controller says a plane is ``finished`` once its picture is on screen,
        and ``busy`` says so from here (an item off screen or transparent is not painted
        soon). Called once the values are where they lie: a picture is drawn where its
        values lay when it was asked for."""
        if self._renderRequired or self._moved():
            self._renderRequired = False
            self._ask()

    def settle(self) -> None:
        """Bring the picture up to date at once (before the view is grabbed)."""
        if self._renderRequired or self._again or self._colouring:
            self._again = False
            self.render()

    def paint(self, painter, *args) -> None:
        if self.image is None:
            return
        if not self.colourable():
            self._shown = None
            super().paint(painter, *args)
            return
        if self._renderRequired or self._moved():
            self._renderRequired = False
            self._ask()
        if self._shown is not None:
            qimage, rect = self._shown
            painter.drawImage(self.mapRectFromParent(rect), qimage)

    def getHistogram(self, *_args, **_kwargs):
        """``(bin starts, counts)`` of the values of the picture on screen (``(None, None)``:
        none yet), made with it on the worker; pyqtgraph's arguments are not used."""
        return self._histogram

    def boundingRect(self) -> QRectF:
        """The values' rectangle, and the picture's while it still shows values from before
        (what is drawn outside the bounding rectangle is never wiped)."""
        bounds = super().boundingRect()
        if self._shown is not None:
            bounds = bounds.united(self.mapRectFromParent(self._shown[1]))
        return bounds

    # -- the worker --------------------------------------------------------------------------

    def _ask(self) -> None:
        """A new picture of the item as it is now (after the one being made, if any)."""
        if self.jobs is None:
            self.render()
            return
        if self._colouring:
            self._again = True
            return
        if not self.colourable():
            return
        self._colouring, self._again = True, False
        self._asked += 1
        self._asked_rect = rect = self._rect()
        job = functools.partial(_colour, self.image, self._levels(), self._table(), self.auto)
        future = self.jobs().submit(job)
        done = functools.partial(post_to_handle, self._handle, "_coloured", self._asked)
        future.add_done_callback(functools.partial(done, rect))

    def _coloured(self, number: int, rect: QRectF, future) -> None:
        self._colouring = False
        error = None if future.cancelled() else future.exception()
        if error is not None:
            logger.error("colouring the plane failed", exc_info=error)
        elif not future.cancelled() and self.image is not None:
            self._show(number, future.result(), rect)
        if self._again or self._moved():  # changed, or moved, since it was asked for
            self._ask()
        self.coloured.emit()

    # -- helpers -----------------------------------------------------------------------------

    def _levels(self) -> tuple[float, float] | None:
        """The levels to colour with (None: found with the picture, ``auto``)."""
        return None if self.auto is not None else tuple(self.levels)

    def _table(self) -> np.ndarray:
        lut = self.lut(self.image, 256) if callable(self.lut) else self.lut
        return colouring.argb_table(lut)

    def _moved(self) -> bool:
        """Whether the values lie elsewhere than the last picture asked for is drawn: the item
        was moved after it was asked for (a new view's values handed over, then placed)."""
        return (
            self._asked_rect is not None
            and not self._again
            and self.colourable()
            and self._asked_rect != self._rect()
        )

    def _rect(self) -> QRectF:
        """Where the values lie now, in the parent's coordinates (a picture is drawn there)."""
        h, w = self.image.shape
        return self.mapRectToParent(QRectF(0, 0, w, h))

    def _show(self, number: int, made: tuple, rect: QRectF) -> None:
        """Swap picture ``number`` in, unless a later one is already on screen (a synchronous
        ``render`` overtook it)."""
        if number < self._shown_number:
            return
        words, self._histogram, found = made
        if found is not None:  # what the picture was coloured with: no new picture for them
            self.levels = np.asarray(found, dtype=float)
            self.levels_found.emit(found)
        self.prepareGeometryChange()
        qimage = pg.functions.ndarray_to_qimage(words, _FORMAT)  # keeps the words alive
        self._shown, self._shown_number, self.qimage = (qimage, rect), number, qimage
        self.update()
        self.histogram_ready.emit()


def _colour(values: np.ndarray, levels, table: np.ndarray, auto) -> tuple:
    """On a worker: the picture of ``values``, their histogram, and (``auto``: with levels
    found in the histogram's sample, else with ``levels``) those levels."""
    histogram, found = contrast.found_levels(values, auto)
    return colouring.picture(values, found or levels, table), histogram, found
