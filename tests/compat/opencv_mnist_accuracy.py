#!/usr/bin/python3
"""opencv_mnist_accuracy.py — an independent reader of Caffe and ONNX files scores a net on MNIST.

Usage: opencv_mnist_accuracy.py DEPLOY.prototxt WEIGHTS.caffemodel IMAGES-idx3 LABELS-idx1
       opencv_mnist_accuracy.py --onnx MODEL.onnx IMAGES-idx3 LABELS-idx1
Loads the net with OpenCV's dnn module (cv2.dnn.readNetFromCaffe, or readNetFromONNX for a model
export_onnx wrote), scales the test images by 1/256
as Caffe's LeNet does (transform_param scale 0.00390625), and prints "correct N of M" where the
argmax of the net's output equals the label. Exit 2 when OpenCV's dnn module is missing.
"""
import struct
import sys

import numpy as np

try:
    import cv2
except ImportError:
    print("python3-opencv is not installed", file=sys.stderr)
    sys.exit(2)


def read_idx(path, magic):
    with open(path, "rb") as f:
        data = f.read()
    found, count = struct.unpack(">II", data[:8])
    if found != magic:
        raise SystemExit(f"{path}: magic {found}, expected {magic}")
    if magic == 2051:
        rows, cols = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, count * rows * cols, 16).reshape(count, 1, rows, cols)
    return np.frombuffer(data, np.uint8, count, 8)


def main():
    first, second, images_path, labels_path = sys.argv[1:5]
    net = cv2.dnn.readNetFromONNX(second) if first == "--onnx" else cv2.dnn.readNetFromCaffe(first, second)
    images = read_idx(images_path, 2051).astype(np.float32) * np.float32(0.00390625)
    labels = read_idx(labels_path, 2049)
    correct = 0
    batch = 100
    for start in range(0, len(labels), batch):
        net.setInput(np.ascontiguousarray(images[start:start + batch]))
        scores = net.forward().reshape(-1, 10)
        correct += int(np.sum(np.argmax(scores, axis=1) == labels[start:start + batch]))
    print(f"correct {correct} of {len(labels)}")


if __name__ == "__main__":
    main()
