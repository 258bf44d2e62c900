#!/usr/bin/env python3
"""data_reference.py — the reference side of scripts/bench/data.sh: a plain single-threaded loop that
does the work Cortado's data pipeline does, with OpenCV and numpy, and prints images/s.

  make-images DIR COUNT   writes COUNT synthetic 256x256 colour JPEGs (smooth shapes and noise, like
                          photographs in how they compress) and DIR/list.txt ("name label" lines)
  mnist IDX_IMAGES        uint8 28x28 images -> float32 scaled by 1/256 (LeNet's transform)
  jpeg LIST ROOT          read bytes once, then per image: decode, random 227x227 crop, random
                          mirror, subtract the mean, float32 C x H x W

Prints "REFERENCE images_per_s=N" on the last line.
"""
import os
import sys
import time

import cv2
import numpy as np

SECONDS = float(os.environ.get("REFERENCE_SECONDS", "3"))


def timed_loop(step, count):
    """Runs step(i) over i = 0, 1, ... (wrapping at count) for about SECONDS; returns images/s."""
    for i in range(min(count, 50)):  # warm-up
        step(i)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < SECONDS:
        for _ in range(100):
            step(done % count)
            done += 1
    return done / (time.perf_counter() - start)


def make_images(folder, count):
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(1)
    with open(os.path.join(folder, "list.txt"), "w") as listing:
        for i in range(count):
            small = rng.integers(0, 256, size=(16, 16, 3), dtype=np.uint8)
            image = cv2.resize(small, (256, 256), interpolation=cv2.INTER_CUBIC)
            for _ in range(6):
                centre = tuple(int(v) for v in rng.integers(0, 256, size=2))
                colour = tuple(int(v) for v in rng.integers(0, 256, size=3))
                cv2.circle(image, centre, int(rng.integers(8, 60)), colour, -1)
            noise = rng.normal(0, 12, size=image.shape)
            image = np.clip(image + noise, 0, 255).astype(np.uint8)
            name = "img_%05d.jpg" % i
            cv2.imwrite(os.path.join(folder, name), image, [cv2.IMWRITE_JPEG_QUALITY, 90])
            listing.write("%s %d\n" % (name, i % 10))


def mnist(path):
    with open(path, "rb") as f:
        raw = f.read()
    images = np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(-1, 28 * 28)
    out = np.empty((1, 28, 28), np.float32)

    def step(i):
        np.multiply(images[i].reshape(1, 28, 28), np.float32(0.00390625), out=out, casting="unsafe")

    return timed_loop(step, len(images))


def jpeg(list_path, root):
    with open(list_path) as f:
        names = [line.rsplit(" ", 1)[0] for line in f if line.strip()]
    blobs = []
    for name in names:
        with open(os.path.join(root, name), "rb") as image_file:
            blobs.append(np.frombuffer(image_file.read(), dtype=np.uint8))
    rng = np.random.default_rng(2)
    mean = np.array([104, 117, 123], np.float32).reshape(3, 1, 1)
    out = np.empty((3, 227, 227), np.float32)

    def step(i):
        image = cv2.imdecode(blobs[i], cv2.IMREAD_COLOR)
        y, x = rng.integers(0, image.shape[0] - 227 + 1), rng.integers(0, image.shape[1] - 227 + 1)
        crop = image[y:y + 227, x:x + 227]
        if rng.integers(0, 2):
            crop = crop[:, ::-1]
        np.subtract(crop.transpose(2, 0, 1), mean, out=out, casting="unsafe")

    return timed_loop(step, len(blobs))


USAGE = "usage: data_reference.py make-images DIR COUNT | mnist IDX_IMAGES | jpeg LIST ROOT"


def main():
    arities = {"make-images": 2, "mnist": 1, "jpeg": 2}
    command = sys.argv[1] if len(sys.argv) > 1 else None
    if command not in arities or len(sys.argv) != 2 + arities[command]:
        sys.exit(USAGE)
    if command == "make-images" and not sys.argv[3].isdigit():
        sys.exit(f"data_reference.py: COUNT must be a number of images, not {sys.argv[3]!r}")
    if command == "make-images":
        make_images(sys.argv[2], int(sys.argv[3]))
        return
    cv2.setNumThreads(1)  # one thread: the plain loop the pipeline is measured against
    rate = mnist(sys.argv[2]) if command == "mnist" else jpeg(sys.argv[2], sys.argv[3])
    print("REFERENCE images_per_s=%.1f" % rate)


if __name__ == "__main__":
    main()
