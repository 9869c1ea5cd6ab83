"""The shared Zarr engine: the one door the mount, the viewer and the CLI go through.

Nothing outside ``zarrfs/engine`` imports an engine module other than this one. The engine imports
neither FUSE nor Qt (a test checks it).

Opening
    ``open(url, *, consolidated=None, follow_symlinks=False, **storage_options) -> Group |
    Array``. ``url`` is a local path, ``file://``,
    ``http(s)://``, ``s3://``, ``gs://``, ``memory://``, or an fsspec chain such as
    ``zip::/path/x.zip``. The URL names the node to open: ``open("s3://b/data.zarr/group/array")``
    opens that array directly (its ``path`` is then ""). ``consolidated=None`` (default: use
    consolidated metadata when present), ``True`` or ``False``. ``follow_symlinks=True``: a local
    store's symlinks are followed wherever they lead (by default a file that resolves outside
    the store's root is refused; ``engine/confine.py``). HTTP and S3 requests time out after
    ``$ZARRFS_TIMEOUT`` seconds without data (default 30) and transient failures are retried;
    a store whose server refuses connections fails at once for a few seconds afterwards.
    Listing a group fetches every child's metadata in one round trip; a child whose metadata
    is broken is still listed and opens (see ``Broken``). A URL naming a broken node raises
    that node's error.

Every node (``Group`` and ``Array``)
    ``path`` ("" for the root, "a/b" below it), ``name`` (last component, "" for the root),
    ``url``, ``kind`` ("group" | "array" | "broken"), ``zarr_format`` (2 | 3), ``attrs`` (dict),
    ``stored_metadata`` (the metadata documents as stored: v3 ``{"zarr.json": {...}}``, v2
    ``{".zarray": {...}, ".zattrs": {...}}``), ``implicit`` (v3 group with no zarr.json),
    ``error`` (None, or the ``ZarrfsError`` saying why the node's data cannot be read: an
    array whose codecs cannot be built, a broken node).

Broken
    A node whose metadata cannot be used (unknown data type, malformed field or document):
    ``node_type`` ("array" | "group" | None, as its document says), ``stored_metadata`` (the
    documents as stored; those that are not JSON as text), ``error``; ``attrs``, ``keys()``
    and ``read``/``[...]``/``read_flat``/``submit`` raise the error (a new instance each
    time): never an empty answer that looks true. An array whose codecs cannot be built is an
    ordinary ``Array``: codecs are built on its first read, which raises.

Group
    ``keys()`` (sorted child names, implicit groups included), ``group[name]`` (also "a/b"),
    ``name in group``, ``iter(group)``, ``members()`` (sorted ``(name, node)`` pairs),
    ``arrays()``, ``groups()``, ``prefetch(names)`` (the metadata of several nodes below in
    one round trip: opening them afterwards costs none).

Array
    ``shape``, ``ndim``, ``size``, ``dtype`` (NumPy dtype, native byte order; ``object`` for
    variable-length strings and bytes), ``data_type`` (the spec's name, e.g. "int16", "string"),
    ``chunks`` (the shape of the chunks a read decodes: the inner chunks when sharded),
    ``shards`` (shard shape or ``None``), ``fill_value`` (a NumPy scalar; ``str``/``bytes`` for
    variable-length types), ``dimension_names`` (tuple or ``None``), ``order`` ("C" | "F"),
    ``codecs`` (list of ``{"name", "configuration"}`` as a v3 codec chain, v2 included),
    ``nbytes`` (decoded size; ``None`` for variable-length types), ``chunk_grid_shape``.
    ``read_path``: a ``ReadPath`` saying which path reads the chunks (``native``: tensorstore,
    in compiled code; else zarrfs's Python pipeline) and why (``describe()``, one line).

    ``array[selection]``: NumPy basic indexing (ints, slices with any step, ``...``, ``()``).
    ``array.read(selection, out=None)``: the same, always an ``ndarray``. Both keep a chunk in
    the shared cache when they read it a second time (``read_flat`` and ``submit`` at once).
    ``array.read_flat(start, stop)``: elements ``start:stop`` of the C-order flattened array as
    a 1-D ``ndarray`` (decodes only the chunks under that range; the mount's byte reads).
    ``array.submit(selection, priority=0, on_chunk=None, out=None, keep_whole_chunks=True)``: a
    background read. Lower ``priority`` runs first (``PRIORITY_VISIBLE``, ``PRIORITY_PREFETCH``).
    ``on_chunk(ChunkEvent)`` is called from a worker thread as each chunk lands in
    ``future.out`` (status "loaded", "missing" or "failed"). ``ReadFuture``: ``result(timeout)``,
    ``cancel()`` (requests still on the wire are dropped and decoding that has not started is
    skipped; ``result`` raises ``ReadCancelled``),
    ``cancelled()``, ``done()``, ``exception()``, ``add_done_callback(fn)``. A failed chunk does
    not stop the others: the read finishes what it can, then raises the first failure.
    Concurrent reads of one chunk fetch and decode it once. ``keep_whole_chunks=False``:
    chunks the selection covers whole skip the shared cache (a streaming reader that never
    returns to them); chunks it covers in part are still kept for the neighbouring read.
    ``array.chunk_key(chunk_coords)``, ``array.chunk_region(chunk_coords)`` (slices in array
    coordinates), ``array.chunks_in(selection)`` (chunk coords a selection touches),
    ``array.stored_size()`` (bytes of stored chunk objects; lists the store; ``None`` over HTTP,
    whose listings do not tell sizes).

Process-wide
    ``set_cache_size(nbytes)`` / ``cache_info()``: the decoded-chunk LRU shared by all arrays
    (default 512 MiB or ``$ZARRFS_CACHE_BYTES``); ``clear_caches()`` also forgets shard indexes.
    The budget is shared with the native path: once it reads for ``submit``/``read_flat``,
    half goes to tensorstore's cache pool (``cache_info()["native_pool"]``).
    ``set_native(enabled)``: the native (tensorstore) path on or off (``$ZARRFS_NATIVE=0``: off).
    ``stats()``: a dict snapshot of counters (requests, bytes_fetched, chunks_decoded,
    cache_hits, cache_misses, decode_seconds; the native path's requests, bytes and chunks as
    tensorstore counts them); ``reset_stats()``.
    ``multiscales(group)``: OME-Zarr multiscale descriptions (see ``ome``); ``levels(group,
    multiscale)``: its pyramid's arrays, finest first; ``axis_names_of_level(group, name)``.
    ``image(group)``: an OME-Zarr ``Image`` (multiscale, ``omero`` channels with label, colour,
    ``Window`` and active flag, defaultZ/T, ``image-label`` colours and properties, names of its
    label images; ``None`` when not an image); ``image_levels(group)``: ``{dataset path:
    Level}`` (nested paths too). ``blend(planes, colors, windows)``: the additive RGB composite
    of channels (``Blender()``: the same, keeping its working buffers between calls); ``auto_window(values)``: a window for a channel that ``omero`` gives none;
    ``scale_to_window(values, start, end)``: values mapped to 0..1 by a window.
    ``summary(node, stored_size=False)`` / ``format_summary(summary_dict)``: what ``zarrfs info``
    prints (``codecs_text(array.codecs)``: the codec chain as it prints it;
    ``cf_summary(array, group=None)``/``cf_summary_rows(cf)``: its CF view, which reads the
    first and last value of each coordinate, as ``(key, text)`` rows); ``json_value(value)``: NumPy values, bytes and special floats as JSON values, the
    one convention (bytes as base64, ``"NaN"``) of the CLI, the mount and the viewer;
    ``human_size(nbytes)`` / ``parse_size("512M")``: sizes as the CLI, the mount and
    the viewer show and take them.
    ``cf``: what the CF conventions and xarray say about an array, parsed once from its
    attributes (``cf.variable(array) -> CFVariable``: dimensions, units, long_name,
    standard_name, ``Packing``, ``Masking``, ``TimeUnits``, problems with attributes that do
    not parse); ``read_decoded(array, selection, var=None, out=None)`` the CF-decoded values
    (the raw ones stay what ``array[...]`` returns; bit for bit xarray's decoding); ``out``
    (``var.decoded_dtype``, the selection's shape; a strided view is fine) saves the page
    faults of a new result, a viewer's reused buffer (the stored values go into one buffer
    of at most 64 MiB that the process keeps between reads). ``cf.decode(var, stored,
    out=None)``: values already read, decoded (into ``out``, e.g. a tile's region of a plane;
    thread-safe, so it may run in an ``on_chunk`` callback); a large one is shared between
    the decode workers and the calling thread. Decoding whole rows is fastest: a chunk's
    region of a wide plane (rows a power of two apart) decodes 2-3x slower than the same
    elements in a band of full rows. ``cf.coordinate_arrays(group, dims)``, ``cf.coordinate``,
    ``cf.auxiliary_arrays(group, array)`` (its ``coordinates`` attribute's arrays),
    ``cf.coordinate_labels``; ``cf.coordinate_names(members)``: which of a group's children
    are coordinates (no read). ``cf.georeference(array, axes=(-2, -1), window=None)``: where
    the planes lie on the Earth (``cf.Georeference``: GDAL's geotransform and a ``cf.CRS``
    from ``grid_mapping``, GDAL's ``_CRS`` or latitude/longitude axes), or
    ``cf.NoGeoreference`` with the reason; ``cf.compact_wkt(wkt, limit)``: the CRS in PROJ's
    shortest WKT under ``limit`` characters; ``cf.compact_dtype(var)``: float32 for decoded
    8- and 16-bit packed counts it keeps apart (files for other programs), else
    ``var.decoded_dtype``; ``cf.plane_position(array, index)``: a plane's
    place on the other axes as ``(dimension, text)`` pairs. ``select_by_value(array, group, {dim: "2000-03-01" or
    "10:20"})``: ``{axis: index or slice}`` by the coordinate variables in ``group``, as
    xarray's ``sel`` (nearest for a value, both ends included for a range;
    ``parse_sel("lat=10:20")`` reads one; ``date_number(text, time_units)``: a typed date
    as a number of a time coordinate, in its calendar). v2 ``_ARRAY_DIMENSIONS`` is ``dimension_names`` wherever the
    metadata has none.
    ``flat_boxes(start, stop, shape)``: C-order elements ``start:stop`` as ``(offset, box)``
    pairs of at most ``2 * ndim - 1`` boxes (tuples of slices), for reading a flat range in the
    background (the mount's read-ahead).
    ``set_threads(decode=None, io=None, *, pin=None)``: the decode and I/O pool sizes (default
    ``$ZARRFS_DECODE_THREADS``/``$ZARRFS_IO_THREADS``, else one decode worker per CPU the
    process may use, capped by its cgroup's CPU quota) and whether decode workers are kept on
    a CPU each (off unless asked). The native path's tensorstore threads follow: as many,
    at most one per CPU (tensorstore's own shared pool at one per CPU).
    ``usable_cpus()``: the CPUs this process may use (its affinity, within its cgroup's CPU
    quota), as the default pool sizes count them.
    ``cancel_all_reads()``: every read under way, and every read after it, ends at once with
    ``ReadCancelled`` (waiting streams notice within 50 ms): for a process shutting down, as
    the mount does on SIGTERM, so that no thread waits out a slow store. Cannot be undone.

Versions (Icechunk repositories)
    ``open(url, branch=, tag=, snapshot=)`` opens a version of an Icechunk repository (a local
    path, ``s3://``, ``gs://``, ``az://``; found by its layout where the URL holds no Zarr node,
    or forced with an ``icechunk://`` prefix); default the branch ``main``. Its nodes' ``url``
    names the snapshot (``repo@SNAPSHOTID/a/b``). ``Repository(url, **storage_options)``:
    ``branches()``/``tags()`` (name -> snapshot id), ``history()`` (every snapshot a branch or
    tag reaches, newest first, as ``Snapshot``: ``id``, ``parent_id``, ``written_at``,
    ``message``, ``metadata``), ``ancestry(branch=|tag=|snapshot=)``, ``snapshot(id)``,
    ``refs_at()`` (snapshot id -> ``["branch main", "tag v1"]``), ``resolve(...) -> Version``
    (``kind``, ``name``, ``snapshot_id``), ``open(branch=|tag=|snapshot=)`` (the root node),
    ``changed_chunks(node_path, from_snapshot, to_snapshot)`` (chunk coords written between
    two snapshots). ``version_of(node)``: ``(Repository, Version)`` or ``None``. Icechunk is
    the optional extra ``zarrfs[icechunk]``; without it a repository raises
    ``UnsupportedError`` naming what to install.

Errors: see ``errors``; all derive from ``ZarrfsError``.
"""

from . import cf
from . import native as _native
from . import stats as _stats
from .cache import cache_info
from .cf import Coordinate, Masking, Packing, TimeUnits, read_decoded
from .cf import Variable as CFVariable
from .cf_select import date_number, parse_sel
from .cf_select import select as select_by_value
from .cf_summary import cf_rows as cf_summary_rows
from .cf_summary import cf_summary
from .composite import Blender, auto_window, blend, scale_to_window
from .errors import (
    AccessDeniedError,
    ChecksumError,
    ChunkDecodeError,
    MetadataError,
    NodeNotFoundError,
    ReadCancelled,
    ReadTooLargeError,
    SelectionError,
    StoreError,
    StoreTimeoutError,
    UnknownCodecError,
    UnknownDataTypeError,
    UnsupportedError,
    ZarrfsError,
)
from .grid import flat_boxes
from .hierarchy import Array, Broken, Group, Node
from .icechunk_repo import Repository, Snapshot, Version, version_of
from .json_values import json_value
from .native import Decision as ReadPath
from .native import clear_caches, set_cache_size, set_native, set_threads
from .ome import (
    Axis,
    Channel,
    Dataset,
    Image,
    ImageLabel,
    Level,
    Multiscale,
    Omero,
    Window,
    axis_names_of_level,
    image,
    image_levels,
    levels,
    multiscales,
)
from .opener import open
from .reader import ChunkEvent
from .scheduler import PRIORITY_PREFETCH, PRIORITY_VISIBLE, ReadFuture, usable_cpus
from .scheduler import cancel_all as cancel_all_reads
from .sizes import human_size, parse_size
from .summary import codecs_text, format_summary, summary


def stats() -> dict:
    """A snapshot of the process-wide counters: the Python pipeline's, and what the native
    path (tensorstore) read, added in."""
    counts = _stats.snapshot()
    for name, value in _native.counters().items():
        counts[name] += value
    return counts


def reset_stats() -> None:
    _stats.reset()
    _native.reset_counters()


__all__ = [
    "Repository",
    "Snapshot",
    "Version",
    "version_of",
    "Array",
    "CFVariable",
    "Coordinate",
    "Masking",
    "Packing",
    "TimeUnits",
    "cf",
    "read_decoded",
    "parse_sel",
    "date_number",
    "select_by_value",
    "Axis",
    "Broken",
    "Channel",
    "Dataset",
    "Image",
    "ImageLabel",
    "Level",
    "Multiscale",
    "Omero",
    "Window",
    "auto_window",
    "Blender",
    "blend",
    "scale_to_window",
    "image",
    "image_levels",
    "axis_names_of_level",
    "flat_boxes",
    "format_summary",
    "codecs_text",
    "cf_summary",
    "cf_summary_rows",
    "human_size",
    "json_value",
    "levels",
    "multiscales",
    "parse_size",
    "summary",
    "ChunkEvent",
    "Group",
    "Node",
    "PRIORITY_PREFETCH",
    "PRIORITY_VISIBLE",
    "ReadFuture",
    "cache_info",
    "cancel_all_reads",
    "clear_caches",
    "open",
    "reset_stats",
    "set_cache_size",
    "set_native",
    "ReadPath",
    "set_threads",
    "usable_cpus",
    "stats",
    "ChecksumError",
    "ChunkDecodeError",
    "MetadataError",
    "NodeNotFoundError",
    "ReadCancelled",
    "ReadTooLargeError",
    "SelectionError",
    "StoreError",
    "StoreTimeoutError",
    "AccessDeniedError",
    "UnknownCodecError",
    "UnknownDataTypeError",
    "UnsupportedError",
    "ZarrfsError",
]
