#!/usr/bin/env bash
# make_cifar10_shaped.sh — a stand-in for CIFAR-10 where it cannot be fetched: synthetic 32×32 colour
# images of 10 classes (each class a colour and a shape, placed and tinted at random over noise, so a
# net can learn them) converted with convert_imageset into data/cifar10/cifar10_{train,test}_lmdb,
# with their mean in data/cifar10/mean.binaryproto (compute_image_mean): the paths of
# models/cifar10/. Deterministic. Safe to run again: what exists is kept.
#
# Usage: data/make_cifar10_shaped.sh [TRAIN_COUNT [TEST_COUNT]]   (default 5000 and 1000)
# Environment: CORTADO_TOOLS, the folder with convert_imageset and compute_image_mean (default
# build/tools); CIFAR_SHAPED_DEST, where to write (default data/cifar10). Needs /usr/bin/python3 with cv2 and numpy (Debian python3-opencv).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${CIFAR_SHAPED_DEST:-$here/cifar10}"
tools="${CORTADO_TOOLS:-$here/../build/tools}"
train_count="${1:-5000}"
test_count="${2:-1000}"

if [[ -d "$dest/cifar10_train_lmdb" && -d "$dest/cifar10_test_lmdb" && -f "$dest/mean.binaryproto" ]]; then
  echo "a CIFAR-shaped dataset is already in $dest"
  exit 0
fi
mkdir -p "$dest"
work=$(mktemp -d "${TMPDIR:-/tmp}/cifar_shaped.XXXXXX")
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$work" "$train_count" "$test_count" <<'PY'
import os, sys
import cv2
import numpy as np
work, counts = sys.argv[1], {"train": int(sys.argv[2]), "test": int(sys.argv[3])}
rng = np.random.default_rng(10)
colours = [(230, 40, 40), (40, 230, 40), (40, 40, 230), (230, 230, 40), (230, 40, 230),
           (40, 230, 230), (240, 240, 240), (128, 64, 0), (0, 128, 64), (64, 0, 128)]
for split, count in counts.items():
    os.makedirs(os.path.join(work, split))
    with open(os.path.join(work, split + ".txt"), "w") as listing:
        for i in range(count):
            label = i % 10
            image = rng.integers(0, 90, size=(32, 32, 3), dtype=np.uint8)
            tint = rng.integers(-25, 26, size=3)
            colour = tuple(int(np.clip(c + t, 0, 255)) for c, t in zip(colours[label], tint))
            cx, cy = (int(v) for v in rng.integers(9, 23, size=2))
            if label % 2 == 0:
                cv2.circle(image, (cx, cy), 7, colour, -1)
            else:
                cv2.rectangle(image, (cx - 6, cy - 6), (cx + 6, cy + 6), colour, -1)
            name = "%s/%05d.png" % (split, i)
            cv2.imwrite(os.path.join(work, name), image)
            listing.write("%s %d\n" % (name, label))
PY
for split in train test; do
  [[ -d "$dest/cifar10_${split}_lmdb" ]] ||
    "$tools/convert_imageset" --shuffle "$work/" "$work/$split.txt" "$dest/cifar10_${split}_lmdb"
done
[[ -f "$dest/mean.binaryproto" ]] || "$tools/compute_image_mean" "$dest/cifar10_train_lmdb" "$dest/mean.binaryproto"
echo "CIFAR-shaped dataset: $train_count training and $test_count test images in $dest"
