"""OME-Zarr images (NGFF 0.4, 0.5 and 0.6), as frozen dataclasses.

NGFF 0.4 keeps its keys (``multiscales``, ``omero``, ``labels``, ``image-label``) in the group's
attributes; 0.5 and 0.6 (on Zarr v3) keep them under ``attributes["ome"]`` with the version
beside it. Each multiscale names its axes (name, type, unit; 0.6 puts them in
``coordinateSystems``) and its datasets (pyramid levels: a path and scale/translation transforms;
0.6 may wrap them in a ``sequence``), finest first. ``omero`` (transitional in every version)
gives each channel a label, a colour, a window and whether it is shown, and ``rdefs`` the
default z and t. A label image's ``image-label`` gives colours and properties per label value.

Malformed ``multiscales`` are a :class:`MetadataError`, never a crash: without them there is no
image. Malformed rendering hints (``omero``, ``image-label``: a colour that is not hex, a window
that is a string) are not worth losing the image for: each falls back to its default and is
logged once.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

from .errors import MetadataError, NodeNotFoundError, ZarrfsError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Axis:
    name: str
    type: str | None = None
    unit: str | None = None


@dataclass(frozen=True)
class Dataset:
    path: str
    scale: tuple[float, ...] | None = None
    translation: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Multiscale:
    name: str | None
    version: str | None
    axes: tuple[Axis, ...]
    datasets: tuple[Dataset, ...]

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)

    @property
    def channel_axis(self) -> int | None:
        """The axis of type ``channel`` (else the one named ``c``), or None."""
        for test in (lambda a: a.type == "channel", lambda a: a.type is None and a.name == "c"):
            found = [k for k, a in enumerate(self.axes) if test(a)]
            if found:
                return found[0]
        return None


@dataclass(frozen=True)
class Window:
    """The displayed range ``start``-``end`` within the data's range ``min``-``max``."""

    start: float
    end: float
    min: float | None = None
    max: float | None = None


RGB = tuple[int, int, int]


@dataclass(frozen=True)
class Channel:
    label: str
    color: RGB
    window: Window | None = None  # None: choose one from the data (``composite.auto_window``)
    active: bool = True


@dataclass(frozen=True)
class Omero:
    channels: tuple[Channel, ...]
    default_z: int | None = None
    default_t: int | None = None


@dataclass(frozen=True)
class ImageLabel:
    """``image-label`` of a label image: RGBA per label value and properties per label value."""

    colors: MappingProxyType = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    properties: MappingProxyType = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    source_image: str | None = None


@dataclass(frozen=True)
class Image:
    """An OME-Zarr image group: its first multiscale and what is said about rendering it."""

    path: str
    multiscale: Multiscale
    omero: Omero | None = None
    image_label: ImageLabel | None = None
    labels: tuple[str, ...] = ()  # names of its label images, under ``labels/``

    @property
    def channel_axis(self) -> int | None:
        return self.multiscale.channel_axis

    def channels(self, count: int) -> tuple[Channel, ...]:
        """``count`` channels: those ``omero`` describes, else (or beyond) a default palette."""
        given = self.omero.channels if self.omero else ()
        return tuple(
            given[k] if k < len(given) else Channel(str(k), default_color(k, count))
            for k in range(count)
        )

    def pixel_size(self, level: int = 0) -> tuple[float, ...] | None:
        """The scale of ``level`` per axis (units in ``multiscale.axes``), or None."""
        datasets = self.multiscale.datasets
        return datasets[level].scale if level < len(datasets) else None


#: Colours for channels without one: one channel grey; otherwise red, green, blue (three
#: channels add up to white), then cyan, magenta, yellow.
_PALETTE: tuple[RGB, ...] = (
    (255, 0, 0),
    (0, 255, 0),
    (0, 0, 255),
    (0, 255, 255),
    (255, 0, 255),
    (255, 255, 0),
)
_TWO: tuple[RGB, ...] = ((0, 255, 0), (255, 0, 255))  # two channels: green, magenta


def default_color(index: int, count: int) -> RGB:
    if count == 1:
        return (255, 255, 255)
    if count == 2:
        return _TWO[index]
    return _PALETTE[index % len(_PALETTE)]


# -- leniency: log each fallback once ---------------------------------------------------------
_logged: set[str] = set()
_logged_lock = threading.Lock()


def _fallback(where: str, message: str) -> None:
    text = f"{where or '/'}: OME-Zarr {message}; using the default"
    with _logged_lock:
        if text in _logged:
            return
        _logged.add(text)
    log.warning("%s", text)


# -- multiscales -----------------------------------------------------------------------------
def _ome(attrs: dict) -> dict:
    ome = attrs.get("ome")
    return ome if isinstance(ome, dict) else attrs


def _raw(attrs: dict) -> tuple[list, str | None]:
    ome = attrs.get("ome")
    if isinstance(ome, dict) and "multiscales" in ome:
        return ome["multiscales"], ome.get("version")
    return attrs.get("multiscales", []), None


def _flat_transforms(entries, where: str) -> list[dict]:
    """The transforms of a dataset, ``sequence`` entries (0.6) flattened in order."""
    out = []
    for t in entries or []:
        if not isinstance(t, dict):
            raise MetadataError(
                f"{where}: coordinateTransformations entries must be objects",
                path=where,
                field="coordinateTransformations",
            )
        if t.get("type") == "sequence":
            out += _flat_transforms(t.get("transformations"), where)
        else:
            out.append(t)
    return out


def _transforms(entry: dict, where: str) -> tuple:
    scale = translation = None
    for t in _flat_transforms(entry.get("coordinateTransformations"), where):
        if t.get("type") == "scale":
            scale = _numbers(t.get("scale"), where, "scale")
        elif t.get("type") == "translation":
            translation = _numbers(t.get("translation"), where, "translation")
    return scale, translation


def _numbers(values, where: str, field: str) -> tuple[float, ...]:
    if not isinstance(values, list) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
    ):
        raise MetadataError(
            f"{where}: {field} must be a list of numbers, got {values!r}", path=where, field=field
        )
    return tuple(float(v) for v in values)


def _axis(a, where: str) -> Axis:
    if isinstance(a, str):  # NGFF 0.3 wrote plain names
        return Axis(a)
    if not isinstance(a, dict) or not isinstance(a.get("name"), str):
        raise MetadataError(f"{where}: invalid axis {a!r}", path=where, field="axes")
    unit = a.get("unit")
    return Axis(a["name"], a.get("type"), unit if isinstance(unit, str) else None)


def _raw_axes(ms: dict, where: str, path: str) -> list:
    """0.4/0.5: ``axes``; 0.6: the axes of the coordinate system the datasets map into (the
    output of the first dataset's transform), else of the first coordinate system."""
    if "axes" in ms or "coordinateSystems" not in ms:
        return ms.get("axes") or []
    systems = ms["coordinateSystems"]
    if not isinstance(systems, list) or not all(isinstance(s, dict) for s in systems):
        raise MetadataError(
            f"{where}: coordinateSystems must be a list of objects",
            path=path,
            field="coordinateSystems",
        )
    first = (ms.get("datasets") or [{}])[0]
    transforms = first.get("coordinateTransformations") if isinstance(first, dict) else None
    output = (transforms or [{}])[0].get("output") if isinstance(transforms, list) else None
    name = output.get("name") if isinstance(output, dict) else output
    named = [s for s in systems if s.get("name") == name]
    chosen = named[0] if named else (systems[0] if systems else {})
    return chosen.get("axes") or []


def parse_multiscales(attrs: dict, *, path: str = "") -> list[Multiscale]:
    """The multiscales described by a group's attributes (empty when it is not OME-Zarr)."""
    raw, version = _raw(attrs)
    if not raw:
        return []
    where = f"{path or '/'} (OME-Zarr multiscales)"
    if not isinstance(raw, list):
        raise MetadataError(f"{where}: multiscales must be a list", path=path, field="multiscales")
    return [_multiscale(ms, version, where, path) for ms in raw]


def _multiscale(ms, version: str | None, where: str, path: str) -> Multiscale:
    if not isinstance(ms, dict) or not isinstance(ms.get("datasets"), list):
        raise MetadataError(
            f"{where}: each multiscale needs a 'datasets' list", path=path, field="multiscales"
        )
    datasets = []
    for d in ms["datasets"]:
        if not isinstance(d, dict) or not isinstance(d.get("path"), str):
            raise MetadataError(
                f"{where}: dataset without a path: {d!r}", path=path, field="datasets"
            )
        datasets.append(Dataset(d["path"], *_transforms(d, where)))
    raw_axes = _raw_axes(ms, where, path)
    if not isinstance(raw_axes, list):
        raise MetadataError(f"{where}: axes must be a list", path=path, field="axes")
    axes = tuple(_axis(a, where) for a in raw_axes)
    for d in datasets:
        for values in (d.scale, d.translation):
            if axes and values is not None and len(values) != len(axes):
                raise MetadataError(
                    f"{where}: dataset {d.path!r} has {len(values)} transform values "
                    f"for {len(axes)} axes",
                    path=path,
                    field="coordinateTransformations",
                )
    return Multiscale(ms.get("name"), ms.get("version") or version, axes, tuple(datasets))


# -- omero: channels and default planes ------------------------------------------------------
def parse_omero(attrs: dict, *, path: str = "") -> Omero | None:
    """The ``omero`` rendering hints of an image group, or None. Lenient (see the module)."""
    raw = _ome(attrs).get("omero")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        _fallback(path, f"omero is not an object ({type(raw).__name__})")
        return None
    channels = raw.get("channels")
    if not isinstance(channels, list):
        if channels is not None:
            _fallback(path, "omero channels is not a list")
        channels = []
    count = len(channels)
    parsed = tuple(_channel(c, k, count, path) for k, c in enumerate(channels))
    rdefs = raw.get("rdefs") if isinstance(raw.get("rdefs"), dict) else {}
    return Omero(
        parsed,
        _index(rdefs.get("defaultZ"), path, "rdefs.defaultZ"),
        _index(rdefs.get("defaultT"), path, "rdefs.defaultT"),
    )


def _channel(raw, k: int, count: int, path: str) -> Channel:
    where = f"omero channel {k}"
    if not isinstance(raw, dict):
        _fallback(path, f"{where} is not an object")
        return Channel(str(k), default_color(k, count))
    label = raw.get("label")
    if not isinstance(label, str) or not label:
        if label is not None:
            _fallback(path, f"{where} label {label!r} is not text")
        label = str(k)
    active = raw.get("active", True)
    if not isinstance(active, bool):
        _fallback(path, f"{where} active {active!r} is not true or false")
        active = True
    color = parse_color(raw.get("color"))
    if color is None:
        if raw.get("color") is not None:
            _fallback(path, f"{where} color {raw.get('color')!r} is not a hex RGB colour")
        color = default_color(k, count)
    return Channel(label, color, _window(raw.get("window"), path, where), active)


def parse_color(value) -> RGB | None:
    """``"FF8000"`` (or ``"#FF8000"``, or 8 digits with alpha) as ``(255, 128, 0)``."""
    if not isinstance(value, str):
        return None
    digits = value.removeprefix("#")
    if len(digits) not in (6, 8):
        return None
    try:
        number = int(digits[:6], 16)
    except ValueError:
        return None
    return (number >> 16 & 255, number >> 8 & 255, number & 255)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _window(raw, path: str, where: str) -> Window | None:
    if raw is None:
        return None
    start = raw.get("start") if isinstance(raw, dict) else None
    end = raw.get("end") if isinstance(raw, dict) else None
    if not (_is_number(start) and _is_number(end)) or start == end:
        _fallback(path, f"{where} window {raw!r} has no numeric start and end")
        return None
    low, high = raw.get("min"), raw.get("max")
    return Window(
        float(start),
        float(end),
        float(low) if _is_number(low) else None,
        float(high) if _is_number(high) else None,
    )


def _index(value, path: str, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    _fallback(path, f"{field} {value!r} is not an index")
    return None


# -- labels ----------------------------------------------------------------------------------
def parse_image_label(attrs: dict, *, path: str = "") -> ImageLabel | None:
    """``image-label`` of a label image (colours as RGBA 0-255, properties), or None."""
    raw = _ome(attrs).get("image-label")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        _fallback(path, "image-label is not an object")
        return ImageLabel()
    colors = {}
    for entry in _entries(raw.get("colors"), path, "image-label colors"):
        rgba = entry.get("rgba")
        if not (isinstance(rgba, list) and len(rgba) in (3, 4) and all(map(_byte, rgba))):
            _fallback(path, f"image-label color {entry!r} has no RGBA of 0-255 integers")
            continue
        colors[entry["label-value"]] = tuple(rgba) + ((255,) if len(rgba) == 3 else ())
    properties = {
        e["label-value"]: MappingProxyType({k: v for k, v in e.items() if k != "label-value"})
        for e in _entries(raw.get("properties"), path, "image-label properties")
    }
    source = raw.get("source")
    image = source.get("image") if isinstance(source, dict) else None
    return ImageLabel(
        MappingProxyType(colors),
        MappingProxyType(properties),
        image if isinstance(image, str) else None,
    )


def _byte(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 255


def _entries(raw, path: str, field: str) -> list[dict]:
    """The entries of a list keyed by an integer ``label-value``; others are logged and left."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        _fallback(path, f"{field} is not a list")
        return []
    good = []
    for e in raw:
        value = e.get("label-value") if isinstance(e, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            good.append(e)
        else:
            _fallback(path, f"{field} entry {e!r} has no integer label-value")
    return good


def parse_label_names(attrs: dict, *, path: str = "") -> tuple[str, ...]:
    """The label images a ``labels`` group names."""
    raw = _ome(attrs).get("labels")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        _fallback(path, "labels is not a list")
        return ()
    return tuple(n for n in raw if isinstance(n, str) and n)


# -- images over engine groups ---------------------------------------------------------------
@dataclass(frozen=True)
class Level:
    """One pyramid level of an image: dataset ``index`` of ``image.multiscale``."""

    image: Image
    index: int

    @property
    def dataset(self) -> Dataset:
        return self.image.multiscale.datasets[self.index]

    @property
    def axis_names(self) -> tuple[str, ...]:
        return self.image.multiscale.axis_names


def image(group) -> Image | None:
    """The OME-Zarr image of an engine ``Group`` (None for anything else). Malformed
    ``multiscales`` raise :class:`MetadataError`; rendering hints fall back (logged)."""
    found = multiscales(group)
    if not found:
        return None
    attrs, path = group.attrs, group.path
    # its levels and labels group in one round trip: the labels group now, the levels next
    # (a viewer opens them all at once; one after another, a remote image took five round trips)
    prefetch = getattr(group, "prefetch", None)
    if prefetch is not None:
        prefetch(declared_paths(attrs))
    return Image(
        path,
        found[0],
        parse_omero(attrs, path=path),
        parse_image_label(attrs, path=path),
        _label_names(group),
    )


def _label_names(group) -> tuple[str, ...]:
    try:
        labels = group["labels"] if "labels" in group else None
    except NodeNotFoundError:
        return ()
    except ZarrfsError as exc:
        _fallback(group.path, f"labels group cannot be opened ({exc.message})")
        return ()
    if labels is None or labels.kind != "group":
        return ()
    return parse_label_names(labels.attrs, path=labels.path)


def image_levels(group) -> dict[str, Level]:
    """``{dataset path: Level}`` for the pyramid of the image ``group`` (paths may be nested,
    ``scale0/image``); empty when it is not an image, or when its multiscales are malformed
    (logged once)."""
    try:
        found = image(group)
    except MetadataError as exc:
        _fallback(group.path, f"multiscales cannot be used ({exc.message})")
        return {}
    if found is None or not found.multiscale.axes:
        return {}
    return {d.path.strip("/"): Level(found, k) for k, d in enumerate(found.multiscale.datasets)}


def declared_paths(attrs: dict) -> list[str]:
    """Paths, relative to a group, of the nodes its OME-Zarr metadata declares: its pyramid
    levels and a ``labels`` group (images), the labels it names (a labels group), its rows and
    wells (``A`` and ``A/1``: plates), its fields (wells), the first series and the ``OME``
    group (bioformats2raw layouts). Malformed metadata declares nothing here."""
    ome = _ome(attrs)
    names: list[str] = []

    def paths(entries, key="path"):
        for e in entries if isinstance(entries, list) else []:
            if isinstance(e, dict) and isinstance(e.get(key), str):
                names.append(e[key])

    multiscale = ome.get("multiscales")
    for ms in multiscale if isinstance(multiscale, list) else []:
        if isinstance(ms, dict):
            paths(ms.get("datasets"))
    if isinstance(multiscale, list) and multiscale:
        names.append("labels")  # NGFF: an image's labels live in its "labels" group
    labels = ome.get("labels")
    names += [n for n in labels if isinstance(n, str)] if isinstance(labels, list) else []
    for key, entries, field in (
        ("plate", "wells", "path"),
        ("plate", "rows", "name"),
        ("well", "images", "path"),
    ):
        if isinstance(ome.get(key), dict):
            paths(ome[key].get(entries), field)
    if "bioformats2raw.layout" in attrs or "bioformats2raw.layout" in ome:
        names += ["0", "OME"]
    parts = ([p for p in n.split("/") if p] for n in names)
    return sorted({"/".join(p) for p in parts if p and not {".", ".."} & set(p)})


def declared_children(path: str, attributes: Callable[[str], dict | None]) -> list[str]:
    """A declarer (``engine/declarers.py``): the children of ``path`` that the OME-Zarr metadata
    of ``path`` or of an ancestor names (a plate's ``A/1``: row ``A``, in it well ``1``), and
    the series a bioformats2raw ``OME`` group names, once it is known (``attributes(p)``: the
    attributes of the node at ``p``, None where it is not known)."""
    parts = [p for p in path.split("/") if p]
    names: set[str] = set()
    for depth in range(len(parts) + 1):
        rest = parts[depth:]
        for declared in declared_paths(attributes("/".join(parts[:depth])) or {}):
            below = declared.split("/")
            if below[: len(rest)] == rest and len(below) > len(rest):
                names.add(below[len(rest)])
    if "OME" in names:  # a bioformats2raw layout: its OME group names every series
        series = (attributes("/".join([*parts, "OME"])) or {}).get("series")
        if isinstance(series, list):
            names.update(s.strip("/") for s in series if isinstance(s, str))
    return sorted(n for n in names if n and "/" not in n and n not in (".", ".."))


def multiscales(group) -> list[Multiscale]:
    """OME-Zarr multiscales of a group (an engine ``Group``); empty for anything else."""
    if getattr(group, "kind", None) != "group":
        return []
    return parse_multiscales(group.attrs, path=group.path)


def levels(group, multiscale: Multiscale) -> list:
    """The pyramid's arrays, finest first, as engine ``Array`` objects.

    A dataset path that names no array is malformed OME metadata (a ``MetadataError`` naming the
    path), so that a caller walking a pyramid meets one kind of error, not a bare not-found.
    """
    out = []
    for d in multiscale.datasets:
        try:
            node = group[d.path]
        except ZarrfsError as exc:
            raise _dataset_error(group, d, f"cannot be opened: {exc.message}") from exc
        if node.kind == "broken":  # opened, but its metadata cannot be used
            raise _dataset_error(group, d, f"cannot be opened: {node.error.message}")
        if node.kind != "array":
            raise _dataset_error(group, d, "is a group, not an array")
        out.append(node)
    return out


def _dataset_error(group, dataset: Dataset, reason: str) -> MetadataError:
    return MetadataError(
        f"{group.path or '/'}: OME-Zarr dataset {dataset.path!r} {reason}",
        path=group.path,
        node_path=group.path,
        field="datasets",
    )


def axis_names_of_level(parent, name: str) -> tuple[str, ...] | None:
    """Axis names for the array ``name`` if it is a pyramid level of the OME group ``parent``."""
    try:
        found = multiscales(parent)
    except MetadataError:
        return None
    for ms in found:
        if ms.axes and any(d.path == name for d in ms.datasets):
            return ms.axis_names
    return None
