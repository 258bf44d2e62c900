#!/usr/bin/python3
"""image_reference.py - synthetic images and what an independent reader (OpenCV's Python, numpy)
sees in them, for tests/tools/convert_imageset_test.cpp.

  image_reference.py DIR   writes DIR/images/ (the files below), DIR/list.txt (one line per file,
                           "path label") and, for every readable image i, DIR/ref/<i>_<variant>.bin:
                           its uint8 pixels in Caffe's C x H x W order (BGR for colour) and
                           DIR/ref/<i>_<variant>.txt: "C H W". Variants: color (cv2.IMREAD_COLOR),
                           gray (cv2.IMREAD_GRAYSCALE), resized (color, cv2.resize to 6 wide and 5 high,
                           INTER_LINEAR). DIR/ref/mean.bin: the mean of the resized images as float64
                           C x H x W (numpy), and DIR/ref/mean.txt: its per-channel means, one a line.
"""
import os
import sys

import cv2
import numpy as np

RESIZE_W, RESIZE_H = 6, 5

# (path under images/, label, kind): kind is "color" (3 channels), "gray" (1 channel) or "bad"
# (not an image). The list keeps this order; the C++ test knows it.
FILES = [
    ("a.png", 3, "color", (5, 7)),
    ("bad.png", 1, "bad", None),
    ("dir with space/b c.jpg", 0, "color", (6, 4)),
    ("sub/gray.png", 7, "gray", (4, 4)),
]


def chw(image):
    """H x W (x C) as OpenCV gives it -> Caffe's planar C x H x W."""
    if image.ndim == 2:
        image = image[:, :, None]
    return np.ascontiguousarray(image.transpose(2, 0, 1))


def write_ref(ref, name, array):
    with open(os.path.join(ref, name + ".bin"), "wb") as f:
        f.write(array.tobytes())
    with open(os.path.join(ref, name + ".txt"), "w") as f:
        f.write(" ".join(str(d) for d in array.shape) + "\n")


def main(out):
    images, ref = os.path.join(out, "images"), os.path.join(out, "ref")
    rng = np.random.RandomState(7)
    resized = []
    with open(os.path.join(out, "list.txt"), "w") as listing:
        for i, (path, label, kind, size) in enumerate(FILES):
            full = os.path.join(images, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            listing.write("%s %d\n" % (path, label))
            if kind == "bad":
                with open(full, "wb") as f:
                    f.write(b"this is not an image\n")
                continue
            shape = size + ((3,) if kind == "color" else ())
            cv2.imwrite(full, rng.randint(0, 256, size=shape).astype(np.uint8))
            os.makedirs(ref, exist_ok=True)
            color = cv2.imread(full, cv2.IMREAD_COLOR)
            write_ref(ref, "%d_color" % i, chw(color))
            write_ref(ref, "%d_gray" % i, chw(cv2.imread(full, cv2.IMREAD_GRAYSCALE)))
            small = chw(cv2.resize(color, (RESIZE_W, RESIZE_H), interpolation=cv2.INTER_LINEAR))
            write_ref(ref, "%d_resized" % i, small)
            resized.append(small.astype(np.float64))
    mean = np.mean(resized, axis=0)
    with open(os.path.join(ref, "mean.bin"), "wb") as f:
        f.write(mean.astype("<f8").tobytes())
    with open(os.path.join(ref, "mean.txt"), "w") as f:
        f.writelines("%.17g\n" % m for m in mean.mean(axis=(1, 2)))


if __name__ == "__main__":
    main(sys.argv[1])
