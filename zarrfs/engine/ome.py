"""OME-Zarr multiscale images (NGFF 0.4 and 0.5), as frozen dataclasses.

NGFF 0.4 keeps ``multiscales`` in the group's attributes; 0.5 (on Zarr v3) keeps it under
``attributes["ome"]`` with the version beside it. Each multiscale names its axes (name, type,
unit) and its datasets (pyramid levels: a path and scale/translation transforms), finest first.
Malformed OME metadata is a :class:`MetadataError`, never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import MetadataError, ZarrfsError


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


def _raw(attrs: dict) -> tuple[list, str | None]:
    ome = attrs.get("ome")
    if isinstance(ome, dict) and "multiscales" in ome:
        return ome["multiscales"], ome.get("version")
    return attrs.get("multiscales", []), None


def _transforms(entry: dict, where: str) -> tuple:
    scale = translation = None
    for t in entry.get("coordinateTransformations") or []:
        if not isinstance(t, dict):
            raise MetadataError(
                f"{where}: coordinateTransformations entries must be objects",
                path=where,
                field="coordinateTransformations",
            )
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
    return Axis(a["name"], a.get("type"), a.get("unit"))


def parse_multiscales(attrs: dict, *, path: str = "") -> list[Multiscale]:
    """The multiscales described by a group's attributes (empty when it is not OME-Zarr)."""
    raw, version = _raw(attrs)
    if not raw:
        return []
    where = f"{path or '/'} (OME-Zarr multiscales)"
    if not isinstance(raw, list):
        raise MetadataError(f"{where}: multiscales must be a list", path=path, field="multiscales")
    out = []
    for ms in raw:
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
        raw_axes = ms.get("axes") or []
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
        out.append(Multiscale(ms.get("name"), ms.get("version") or version, axes, tuple(datasets)))
    return out


def declared_paths(attrs: dict) -> list[str]:
    """Paths, relative to a group, of the nodes its OME-Zarr metadata declares: its pyramid
    levels and a ``labels`` group (images), the labels it names (a labels group), its rows and
    wells (``A`` and ``A/1``: plates), its fields (wells), the first series and the ``OME``
    group (bioformats2raw layouts).

    A web server without directory pages, or S3 over HTTPS, cannot list a group; these paths
    let such a group show its children all the same (each is checked before it is shown).
    Lenient: malformed metadata declares nothing here (:func:`parse_multiscales` reports it)."""
    ome = attrs.get("ome") if isinstance(attrs.get("ome"), dict) else attrs
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
            raise MetadataError(
                f"{group.path or '/'}: OME-Zarr dataset {d.path!r} cannot be opened: {exc.message}",
                path=group.path,
                field="datasets",
            ) from exc
        if node.kind == "broken":  # opened, but its metadata cannot be used
            raise MetadataError(
                f"{group.path or '/'}: OME-Zarr dataset {d.path!r} cannot be opened: "
                f"{node.error.message}",
                path=group.path,
                field="datasets",
            )
        if node.kind != "array":
            raise MetadataError(
                f"{group.path or '/'}: OME-Zarr dataset {d.path!r} is a group, not an array",
                path=group.path,
                field="datasets",
            )
        out.append(node)
    return out


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
