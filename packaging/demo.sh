#!/usr/bin/env bash
# Set up (packaging/setup.sh), then show zarrfs on the bundled demo store: the hierarchy, an
# array's summary, a selection saved as TIFF, the store mounted as a folder of decoded files,
# a screenshot of the viewer rendered offscreen, and the README's pictures
# (packaging/readme_images.py: an OME-Zarr composite with labels, a CF map, a mounted folder).
# Output files go to ./zarrfs-demo/ (git-ignored).
#   --readme-images   only render the README's pictures, into docs/images/ (to commit them)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "--readme-images" ]; then
    bash "$repo/packaging/setup.sh"
    "${ZARRFS_VENV:-$repo/.venv}/bin/python" "$repo/packaging/readme_images.py" "$repo/docs/images"
    exit 0
fi
bash "$repo/packaging/setup.sh"
venv="${ZARRFS_VENV:-$repo/.venv}"
zarrfs="$venv/bin/zarrfs"
demo="$repo/resources/demo.zarr"
out="$PWD/zarrfs-demo"
mkdir -p "$out"
export FUSE_LIBRARY_NAME=fuse3

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step zarrfs tree resources/demo.zarr
"$zarrfs" tree "$demo"
step zarrfs info resources/demo.zarr/volumes/phantom
"$zarrfs" info "$demo/volumes/phantom"
step zarrfs get resources/demo.zarr/volumes/phantom "[32]" -o zarrfs-demo/plane32.tif
"$zarrfs" get "$demo/volumes/phantom" "[32]" -o "$out/plane32.tif"

if [ -e /dev/fuse ] && command -v fusermount3 >/dev/null; then
    mnt="$(mktemp -d)"
    trap '"$zarrfs" unmount "$mnt" >/dev/null 2>&1 || true; rmdir "$mnt" 2>/dev/null || true' EXIT
    step zarrfs mount resources/demo.zarr "$mnt"
    "$zarrfs" mount "$demo" "$mnt"
    step ls -l MOUNT/volumes/phantom '&&' ls MOUNT/volumes/phantom/planes '|' head -n 5
    ls -l "$mnt/volumes/phantom"
    ls "$mnt/volumes/phantom/planes" | head -n 5
    plane="$(ls "$mnt/volumes/phantom/planes" | grep '\.npy$' | sed -n 33p)"
    step python -c "numpy.load('MOUNT/volumes/phantom/planes/$plane')"
    "$venv/bin/python" -c "import numpy, sys; a = numpy.load(sys.argv[1]); print(a.shape, a.dtype, 'min', a.min(), 'max', a.max())" "$mnt/volumes/phantom/planes/$plane"
    step zarrfs unmount "$mnt"
    "$zarrfs" unmount "$mnt"
    rmdir "$mnt"
    trap - EXIT
else
    echo "(no /dev/fuse here: skipping the mount part of the demo)"
fi

step zarrfs view resources/demo.zarr --node images/cells --screenshot zarrfs-demo/viewer.png
QT_QPA_PLATFORM=offscreen QT_LOGGING_RULES="qt.qpa.*=false" "$zarrfs" view "$demo" --node images/cells --screenshot "$out/viewer.png"
step python packaging/readme_images.py zarrfs-demo
"$venv/bin/python" "$repo/packaging/readme_images.py" "$out"
echo
echo "Wrote $out/plane32.tif, $out/viewer.png and the README's pictures. Next: zarrfs view resources/demo.zarr"
