"""The main window: the hierarchy on the left, the data in the middle, metadata on the right.

Opening a store, listing groups and resolving pyramids all run in the background; the window only
ever waits on signals. Every failure goes through ``messages.describe`` into the message bar.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
from PySide6.QtCore import QModelIndex, QSortFilterProxyModel, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QSplitter,
    QStackedWidget,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

import zarrfs.engine as engine
from zarrfs.storage_options import VERSION_FLAGS

from . import (
    coastlines,
    export,
    messages,
    missing_colour,
    open_as_file,
    pyramid,
    series_view,
    transforms,
    view_options,
)
from .image_view import ImageView
from .info_panel import InfoPanel
from .line_view import LineView
from .open_dialog import OpenUrlDialog, add_recent, recent_stores, settings
from .other_views import ScalarView
from .resources import icon
from .status import MessageBar, StatusPanel
from .table_view import TableView
from .tasks import Background
from .tree_model import COLUMNS, HierarchyModel
from .version_picker import VersionPicker

logger = logging.getLogger(__name__)
#: the tree's columns that only CF arrays fill
CF_COLUMNS = (COLUMNS.index("Long name"), COLUMNS.index("Units"))
#: the most of the window the tree pane grows to, to show its columns
TREE_MAX_SHARE = 1 / 3  # the picture keeps the room: a map needs it more than long names
_ROOT = QModelIndex()  # the invalid index: "no parent"


class MainWindow(QMainWindow):
    """``open_store(url, options)`` and ``select_path(path)`` are the programmatic entry points."""

    store_opened = Signal(str)
    node_shown = Signal(str)

    def __init__(self, settings_store=None, *, cache_size: int | None = None):
        """``cache_size``: the command line's ``--cache-size`` (bytes); it wins over the saved
        View > Cache size for this run, and the saved value is kept for the next."""
        super().__init__()
        self.cache_size_override = cache_size
        self.setWindowTitle("zarrfs viewer")
        self.setWindowIcon(icon("zarrfs"))
        self.settings = settings_store if settings_store is not None else settings()
        self.background = Background(parent=self)
        self.mounts = open_as_file.Mounts()  # zarrfs mounts made for "Open as a file"
        self.unmounting = None  # the process unmounting them once the window closed
        self.root = None
        self.store_url = ""
        self.storage_options: dict = {}
        self.current_node = None
        self._show_token = 0
        self._pending_path: str | None = None
        self._pending_indices: list[int] | None = None
        self._build_tree()
        self._build_data()
        self.info = InfoPanel(self.background)
        splitter = QSplitter()
        splitter.addWidget(self.tree_panel)
        splitter.addWidget(self.data_panel)
        splitter.addWidget(self.info)
        splitter.setSizes([280, 800, 340])
        self.splitter = splitter
        self.setCentralWidget(splitter)
        self.status = StatusPanel(self.statusBar(), self.image.progress)
        self.versions.changes.connect(
            lambda _path, changed, chunks, shape: self.image.changed_item.set_changed(
                changed, chunks, shape
            )
        )
        self.node_shown.connect(lambda _path: self.versions.compare_node(self.current_node))
        self._build_menus()
        self.setAcceptDrops(True)
        self.resize(1440, 860)

    # -- construction ----------------------------------------------------------------------------

    def _build_tree(self) -> None:
        self.model = HierarchyModel(self.background, self)
        self.model.listing_failed.connect(self.post)
        self.model.listed.connect(self._listed)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setRecursiveFilteringEnabled(True)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter nodes…")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._filter_changed)
        self.tree = QTreeView()
        self.tree.setModel(self.proxy)
        self.tree.setUniformRowHeights(True)
        self.tree.header().setStretchLastSection(False)
        self.tree.header().setSectionResizeMode(0, self.tree.header().ResizeMode.ResizeToContents)
        self.tree.selectionModel().currentChanged.connect(self._current_changed)
        self._show_cf_columns(False)  # shown once a listed array has a long name or units
        self.tree_panel = QWidget()
        layout = QVBoxLayout(self.tree_panel)
        layout.setContentsMargins(0, 0, 0, 0)
        self.versions = VersionPicker(self.background)
        self.versions.chosen.connect(self.show_version)
        self.versions.message.connect(self.post)
        layout.addWidget(self.versions)
        layout.addWidget(self.filter)
        layout.addWidget(self.tree)

    def _build_data(self) -> None:
        self.message_bar = MessageBar()
        self.image = ImageView()
        self.image.background = self.background
        self.line = LineView(self.background)
        self.scalar = ScalarView()
        self.table = TableView()
        self.placeholder = QLabel("Open a store (File ▸ Open) or drop a folder here.")
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.stack = QStackedWidget()
        for widget in (self.placeholder, self.image, self.line, self.scalar, self.table):
            self.stack.addWidget(widget)
            if hasattr(widget, "message"):
                widget.message.connect(self.post)
        self.show_as = QComboBox()
        self.show_as.currentIndexChanged.connect(self._show_as_changed)
        self.show_as_row = QWidget()
        row = QHBoxLayout(self.show_as_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("Show:"))
        row.addWidget(self.show_as)
        row.addStretch(1)
        self.show_as_row.hide()
        self.data_panel = QWidget()
        layout = QVBoxLayout(self.data_panel)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.message_bar)
        layout.addWidget(self.show_as_row)
        layout.addWidget(self.stack, 1)

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        open_url = QAction(icon("open-url"), "Open &URL…", self)
        open_url.setShortcut(QKeySequence("Ctrl+L"))
        open_url.triggered.connect(self.ask_url)
        open_folder = QAction(icon("open-folder"), "Open &Folder…", self)
        open_folder.setShortcut(QKeySequence.StandardKey.Open)
        open_folder.triggered.connect(self.ask_folder)
        file_menu.addAction(open_url)
        file_menu.addAction(open_folder)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self._fill_recent()
        file_menu.addSeparator()
        file_menu.addAction("&Export view as PNG…", self.ask_export_screen)
        file_menu.addAction("Export full-resolution PNG…", self.ask_export_full)
        file_menu.addAction("Export plane as &TIFF…", self.ask_export_tiff)
        file_menu.addAction("Open plane as a &file…", self.ask_open_as_file)
        file_menu.addSeparator()
        quit_action = file_menu.addAction("&Quit")
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.addAction(open_url)
        toolbar.addAction(open_folder)
        view_menu = self.menuBar().addMenu("&View")
        view_menu.addAction("Fit image", self.image.fit)
        grid = view_menu.addAction("Chunk grid")
        grid.setCheckable(True)
        grid.toggled.connect(self.image.grid_check.setChecked)
        self.messages_dock = QDockWidget("Messages", self)
        self.messages_dock.setObjectName("messagesDock")
        self.messages_dock.setWidget(self.message_bar.history)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.messages_dock)
        self.messages_dock.hide()
        view_menu.addAction(self.messages_dock.toggleViewAction())
        series_view.install(self, view_menu)  # self.series, self.series_dock
        missing_colour.install(self, view_menu)
        coastlines.install(self, view_menu)
        view_menu.addAction("Cache size…", self.ask_cache_size)
        if self.cache_size_override is None:
            self.apply_cache_setting()
        else:
            engine.set_cache_size(self.cache_size_override)

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        for url, options in recent_stores(self.settings):
            action = self.recent_menu.addAction(url)
            action.triggered.connect(lambda _=False, u=url, o=options: self.open_store(u, o))
        self.recent_menu.setEnabled(not self.recent_menu.isEmpty())

    # -- settings ----------------------------------------------------------------------------------

    def apply_cache_setting(self) -> None:
        """Use the cache budget saved in the settings (MiB), if the user chose one."""
        value = self.settings.value("cache_mb")
        if value not in (None, ""):
            engine.set_cache_size(int(value) * 2**20)

    def ask_cache_size(self) -> None:
        from PySide6.QtWidgets import QInputDialog

        current = engine.cache_info().get("capacity", 512 * 2**20) // 2**20
        value, ok = QInputDialog.getInt(
            self, "Cache size", "Decoded-chunk cache (MiB):", int(current), 16, 1 << 20, 64
        )
        if ok:
            self.settings.setValue("cache_mb", value)
            self.apply_cache_setting()

    # -- opening ---------------------------------------------------------------------------------

    # -- export ----------------------------------------------------------------------------------

    def _ask_png(self, title: str) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self, title, "view.png", "PNG images (*.png)")
        return path or None

    def ask_export_screen(self) -> None:
        path = self._ask_png("Export view as PNG")
        if path:
            self.export_screen_png(path)

    def ask_export_full(self) -> None:
        path = self._ask_png("Export full-resolution PNG")
        if path:
            self.export_full_png(path)

    def export_screen_png(self, path: str) -> None:
        try:
            export.screen_png(self.image, path)
        except OSError as exc:
            self.post(messages.describe(exc))
            return
        self.statusBar().showMessage(f"Saved {path}", 5000)

    def export_full_png(self, path: str, on_done=None) -> None:
        """The plane on screen at full resolution, read and rendered in the background."""
        request = export.full_plane(self.image.shown())
        if request is None:
            self.post(messages.describe(ValueError("no image to export")))
            return
        write = lambda: export.write_png(export.render(request), path)  # noqa: E731
        self._save_in_background(path, write, request.array.path, on_done)

    def _save_in_background(self, path: str, write, node_path: str, on_done=None) -> None:
        """Run ``write`` (which writes ``path``) in a worker; "Saved" or the error after."""

        def done(_result) -> None:
            self.statusBar().showMessage(f"Saved {path}", 5000)
            if on_done is not None:
                on_done(path)

        self.background.run(
            write, done, lambda exc: self.post(messages.describe(exc, node=node_path))
        )

    def ask_export_tiff(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Export plane as TIFF", "plane.tif", "TIFF images (*.tif *.tiff)"
        )
        if path:
            self.export_tiff(path)

    def export_tiff(self, path: str, on_done=None) -> None:
        """The plane on screen's values as the mount's ``.tif`` of it, in the background."""
        try:
            array, index = export.plane_tiff(self.image)
        except ValueError as exc:
            self.post(messages.describe(exc))
            return
        write = lambda: export.write_tiff(array, index, path)  # noqa: E731
        self._save_in_background(path, write, array.path, on_done)

    # -- open as a file ---------------------------------------------------------------------------

    def plane_as_file(self, mount: bool, on_done, on_error=None) -> None:
        """Find (``mount``: or make) the plane on screen's ``.tif`` under a zarrfs mount of the
        store, in the background; ``on_done(path)``."""
        try:  # the plane the TIFF export writes: the same file
            _, indices = export.plane_tiff(self.image)
        except ValueError as exc:
            self.post(messages.describe(exc))
            return
        node_path = self.image.shown().node_path
        url, options = self.store_url, dict(self.storage_options)
        mounts = self.mounts if mount else None
        self.background.run(
            lambda: open_as_file.locate(url, options, node_path, indices, mounts),
            on_done,
            on_error or (lambda exc: self.post(messages.describe(exc, node=node_path))),
        )

    def ask_open_as_file(self) -> None:
        def not_mounted(exc) -> None:
            if not isinstance(exc, FileNotFoundError) or "no zarrfs mount" not in str(exc):
                self.post(messages.describe(exc))
                return
            answer = QMessageBox.question(
                self, "Open as a file", "Mount the store read-only (until the viewer exits)?"
            )
            if answer == QMessageBox.StandardButton.Yes:
                self.plane_as_file(True, self._show_plane_file)

        self.plane_as_file(False, self._show_plane_file, not_mounted)

    def _show_plane_file(self, path) -> None:
        box = QMessageBox(self)
        box.setWindowTitle("Open as a file")
        box.setText(str(path))
        copy = box.addButton("Copy path", QMessageBox.ButtonRole.ActionRole)
        program = box.addButton("Open", QMessageBox.ButtonRole.ActionRole)
        box.addButton(QMessageBox.StandardButton.Close)
        box.exec()
        if box.clickedButton() is copy:
            QApplication.clipboard().setText(str(path))
        elif box.clickedButton() is program:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))

    def post(self, message: messages.UserMessage) -> None:
        logger.info("%s", message.one_line())
        self.message_bar.post(message)

    def ask_url(self) -> None:
        dialog = OpenUrlDialog(self, self.store_url, self.storage_options)
        if dialog.exec():
            try:
                url, options = dialog.result_options()
            except ValueError as exc:
                self.post(messages.describe(exc))
                return
            if url:
                self.open_store(url, options)

    def ask_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open a Zarr folder")
        if folder:
            self.open_store(folder, {})

    def open_store(
        self,
        url: str,
        options: dict | None = None,
        *,
        path: str | None = None,
        indices: list[int] | None = None,
        opening=None,
        look: view_options.ViewOptions | None = None,
    ) -> None:
        """Open ``url`` in the background; then show ``path`` (a node inside) if given.
        ``opening``: a future of that open already under way (``zarrfs view`` starts it
        before Qt loads, ``early_open``). ``look``: how that node should look."""
        options = dict(options or {})
        self._pending_look = look
        self.statusBar().showMessage(f"Opening {url}…")
        self._pending_path, self._pending_indices = path, indices
        self.model.clear()
        self._show_cf_columns(False)
        self.image.clear()
        self._stop_reads()
        self.info.clear()
        self.stack.setCurrentWidget(self.placeholder)
        self.root = None
        self.store_url, self.storage_options = url, options
        self.background.run(
            opening.result if opening is not None else lambda: engine.open(url, **options),
            lambda node: self._opened(url, options, node),
            lambda exc: self._open_failed(url, exc),
        )

    def _opened(self, url: str, options: dict, node) -> None:
        if url != self.store_url:
            return
        self.root = node
        label = Path(url.rstrip("/")).name or url
        self.model.set_root_node(node, label)
        self.versions.show_repository(node)
        self._fit_tree(node.path)  # a store that is one CF array lists nothing
        self.statusBar().showMessage(f"Opened {url}", 5000)
        add_recent(self.settings, url, options)
        self._fill_recent()
        top = self.proxy.index(0, 0)
        self.tree.expand(top)
        self.store_opened.emit(url)
        if self._pending_path:
            self.select_path(self._pending_path)
        else:
            self.tree.setCurrentIndex(top)

    def show_version(self, version: dict) -> None:
        """Reopen the repository at ``version`` (``{"branch": name}``, ``tag``, ``snapshot``),
        keeping the node shown and its plane where they exist there."""
        options = {k: v for k, v in self.storage_options.items() if k not in VERSION_FLAGS}
        node, state = self.current_node, self.image.state
        indices = list(state.indices) if state is not None and node is not None else None
        self.open_store(
            self.store_url,
            options | version,
            path=node.path if node is not None else None,
            indices=indices,
        )

    def _open_failed(self, url: str, exc: BaseException) -> None:
        if url == self.store_url:
            self.statusBar().showMessage(f"Could not open {url}", 5000)
            self.post(messages.describe(exc, url=url))

    def select_path(self, path: str) -> None:
        """Show the node at ``path`` now (resolved directly), and select it once listed."""
        path = path.strip("/")
        self._pending_path = path
        root = self.root
        if root is None:
            return

        def resolve():
            return root if not path or root.kind != "group" else root[path]

        self.background.run(
            resolve, self.show_node, lambda exc: self.post(messages.describe(exc, node=path))
        )
        self._listed("")

    def _listed(self, group_path: str) -> None:
        """Expand the tree towards the pending path as listings arrive."""
        self._fit_tree(group_path)
        target = self._pending_path
        if target is None:
            if self.filter.text():
                self._fetch_all_listed()
            return
        parts = [p for p in target.split("/") if p]
        for depth in range(len(parts), -1, -1):
            index = self.model.find("/".join(parts[:depth]))
            if index.isValid() or depth == 0:
                break
        proxy_index = self.proxy.mapFromSource(index) if index.isValid() else self.proxy.index(0, 0)
        if depth == len(parts) and proxy_index.isValid():
            self._pending_path = None
            self.tree.selectionModel().blockSignals(True)
            self.tree.setCurrentIndex(proxy_index)
            self.tree.selectionModel().blockSignals(False)
            self.tree.scrollTo(proxy_index)
        elif proxy_index.isValid():
            self.tree.expand(proxy_index)

    def _show_cf_columns(self, shown: bool) -> None:
        for column in CF_COLUMNS:
            self.tree.setColumnHidden(column, not shown)

    def _fit_tree(self, path: str) -> None:
        """Show the long name and units columns once a listed array has either (the node at
        ``path`` or a child just listed), and widen the tree pane (once per store: they stay
        shown until another store opens; to at most :data:`TREE_MAX_SHARE` of the window) so
        that every column shows without scrolling sideways."""
        if not self.tree.isColumnHidden(CF_COLUMNS[0]) or not self.model.shows_cf_columns(path):
            return
        self._show_cf_columns(True)
        # once the rows just inserted are laid out: columns are sized by the rows shown
        QTimer.singleShot(0, self._widen_tree)

    def _widen_tree(self) -> None:
        for column in range(1, self.model.columnCount()):
            self.tree.resizeColumnToContents(column)
        header = self.tree.header()
        frame = self.tree.width() - self.tree.viewport().width()
        wanted = header.length() + frame + self.tree.verticalScrollBar().sizeHint().width()
        sizes = self.splitter.sizes()
        grow = min(wanted, int(TREE_MAX_SHARE * sum(sizes))) - sizes[0]
        if grow <= 0:
            return
        # from the info pane first, then from the picture, each keeping what it needs
        panes = [self.splitter.widget(k) for k in range(len(sizes))]
        for k in (2, 1):
            if k < len(sizes):
                least = max(200, panes[k].minimumSizeHint().width())
                take = min(grow, max(0, sizes[k] - least))
                sizes[0], sizes[k], grow = sizes[0] + take, sizes[k] - take, grow - take
        self.splitter.setSizes(sizes)

    def _filter_changed(self, text: str) -> None:
        self.proxy.setFilterFixedString(text)
        if text:
            self._fetch_all_listed()
            self.tree.expandAll()

    def _fetch_all_listed(self, parent: QModelIndex = _ROOT, budget: list | None = None):
        """While filtering, list every group (bounded) so matches below unlisted groups appear."""
        budget = budget if budget is not None else [2000]
        for row in range(self.model.rowCount(parent)):
            if budget[0] <= 0:
                return
            index = self.model.index(row, 0, parent)
            budget[0] -= 1
            if self.model.canFetchMore(index):
                self.model.fetchMore(index)
            self._fetch_all_listed(index, budget)

    # -- showing a node --------------------------------------------------------------------------

    def _current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        node = self.model.item(self.proxy.mapToSource(current)).node if current.isValid() else None
        if node is not None:
            self._pending_path = None
            self.show_node(node)

    def show_node(self, node) -> None:
        """Describe ``node`` and show its data with the view that suits it."""
        self.current_node = node
        self._show_token += 1
        token, root = self._show_token, self.root
        self._stop_reads()  # their reads are of no use any more
        self.info.show_node(node, self.store_url)
        self.show_as_row.hide()
        self.node_shown.emit(node.path)
        if node.error is not None:  # nothing to read: say why, read nothing
            self.image.clear()
            reason = messages.describe(node.error, node=node.path).one_line()
            self.placeholder.setText(f"/{node.path}: {reason}")
            self.stack.setCurrentWidget(self.placeholder)
            return

        def work():
            return pyramid.find_pyramid(root, node), pyramid.image_group(root, node)

        self.background.run(
            work,
            lambda r: self._show_data(token, node, *r),
            lambda exc: self._show_failed(token, node, exc),
        )

    def _show_failed(self, token, node, exc) -> None:
        if token == self._show_token:
            self.post(messages.describe(exc, node=node.path))
            self.stack.setCurrentWidget(self.placeholder)

    def _show_data(self, token: int, node, found, group) -> None:
        if token != self._show_token:
            return
        channels = found.channels if found is not None else ()
        if group is not None or channels:
            self.info.show_node(node, self.store_url, multiscale_group=group, channels=channels)
        if found is None:  # a plain group
            self.image.clear()
            self.placeholder.setText(f"Group /{node.path}: select an array to see its data.")
            self.stack.setCurrentWidget(self.placeholder)
            return
        self._pyramid = found
        dtype = np.dtype(found.node.dtype)
        fields = transforms.numeric_fields(dtype)
        if dtype.names is not None:
            self.show_as.blockSignals(True)
            self.show_as.clear()
            self.show_as.addItem("Table", None)
            for name in fields:
                self.show_as.addItem(f"Field '{name}'", name)
            self.show_as.blockSignals(False)
            self.show_as_row.show()
        self._show_view(found, None)

    def _show_as_changed(self, _index: int) -> None:
        if getattr(self, "_pyramid", None) is not None:
            self._show_view(self._pyramid, self.show_as.currentData())

    def _stop_reads(self) -> None:
        """Cancel the line, value and table reads: the user moved on (the image's loader
        cancels its own when given a new source)."""
        self.line.stop()
        self.scalar.stop()
        self.table.stop()
        self.series.stop()

    def _show_view(self, found, field_name: str | None) -> None:
        self._stop_reads()
        node = found.node
        dtype = np.dtype(node.dtype)
        indices, self._pending_indices = self._pending_indices, None
        if node.ndim and 0 in tuple(node.shape):
            self.image.clear()
            self.placeholder.setText(f"/{node.path} is empty: shape {tuple(node.shape)}.")
            self.stack.setCurrentWidget(self.placeholder)
        elif node.ndim == 0:
            self.image.clear()
            self.stack.setCurrentWidget(self.scalar)
            self.scalar.show_array(node)
        elif not transforms.is_imageable(dtype, field_name):
            self.image.clear()
            self.stack.setCurrentWidget(self.table)
            self.table.show_array(node)
        elif node.ndim == 1:
            self.image.clear()
            self.stack.setCurrentWidget(self.line)
            self.line.show_array(node, field_name)
        else:
            self.stack.setCurrentWidget(self.image)
            self.image.set_array(
                node.path,
                node,
                found.levels,
                found.arrays,
                field_name=field_name,
                indices=indices,
                axis_names=found.axis_names,
                image=found.image,
                image_group=found.group,
                labelled=found.labelled,
                cf=found.cf if field_name is None else None,
            )
            look, self._pending_look = getattr(self, "_pending_look", None), None
            view_options.apply(self.image, node.path, look)
            self.image.setFocus()

    # -- drag and drop, closing ------------------------------------------------------------------

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls() or event.mimeData().hasText():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        target = dropped_target(event.mimeData())
        if target:
            event.acceptProposedAction()
            self.open_store(target, {})

    def closeEvent(self, event) -> None:
        self.image.close_reads()
        self._stop_reads()
        self.status.timer.stop()
        self.background.close()
        self.unmounting = self.mounts.unmount_all()  # its own process: the window does not wait
        super().closeEvent(event)


def dropped_target(mime) -> str | None:
    """A local folder or a URL from a drop (a file inside a store opens the store's folder)."""
    if mime.hasUrls():
        url: QUrl = mime.urls()[0]
        if url.isLocalFile():
            path = url.toLocalFile()
            if os.path.isfile(path) and os.path.basename(path) in (
                "zarr.json",
                ".zarray",
                ".zgroup",
                ".zattrs",
                ".zmetadata",
            ):
                path = os.path.dirname(path)
            return path
        return url.toString()
    text = mime.text().strip() if mime.hasText() else ""
    return text or None
