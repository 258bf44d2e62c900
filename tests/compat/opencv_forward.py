#!/usr/bin/python3
"""opencv_forward.py — an independent reader of Caffe files runs a net forward on given input.

Usage: opencv_forward.py DEPLOY.prototxt WEIGHTS.caffemodel INPUT.f32 N C H W OUTPUT.f32
Loads the net with OpenCV's dnn module (cv2.dnn.readNetFromCaffe), feeds the raw float32 N×C×H×W
input and writes the net's last output as raw float32. Exit 2 when OpenCV's dnn module is missing.
"""
import sys

import numpy as np

try:
    import cv2
except ImportError:
    print("python3-opencv is not installed", file=sys.stderr)
    sys.exit(2)


def main():
    deploy, weights, input_path = sys.argv[1:4]
    shape = tuple(int(d) for d in sys.argv[4:8])
    output_path = sys.argv[8]
    net = cv2.dnn.readNetFromCaffe(deploy, weights)
    net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
    net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
    net.setInput(np.fromfile(input_path, dtype=np.float32).reshape(shape))
    np.ascontiguousarray(net.forward(), dtype=np.float32).tofile(output_path)


if __name__ == "__main__":
    main()
