#!/usr/bin/env python3
"""classify_digits.py: classifies MNIST test digits with a trained LeNet through Cortado's Python
interface (pycaffe's API: `import cortado as caffe`, caffe.Classifier), prints the first predictions
and the accuracy.

Usage (from the repository root, after training LeNet, e.g. trainer train --solver=models/mnist/lenet_solver.prototxt):
  PYTHONPATH=build/python python3 models/mnist/classify_digits.py models/mnist/lenet_iter_10000.caffemodel
      [--count 1000] [--mnist data/mnist] [--gpu]
"""
import argparse
import os
import sys

import numpy as np

import cortado as caffe

HERE = os.path.dirname(os.path.abspath(__file__))


def read_idx(path):
    """An IDX file (MNIST's format) as a numpy array: big-endian dimensions after a 4-byte magic."""
    with open(path, 'rb') as f:
        raw = f.read()
    dims = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], 'big') for i in range(dims))
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * dims).reshape(shape)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('weights', help='a trained LeNet .caffemodel')
    parser.add_argument('--model', default=os.path.join(HERE, 'lenet.prototxt'), help='the deploy net')
    parser.add_argument('--mnist', default='data/mnist', help='folder with t10k-*-ubyte (data/get_mnist.sh)')
    parser.add_argument('--count', type=int, default=1000, help='how many test digits')
    parser.add_argument('--gpu', action='store_true', help='run on GPU 0')
    args = parser.parse_args()
    if args.gpu:
        caffe.set_mode_gpu()
    images = read_idx(os.path.join(args.mnist, 't10k-images-idx3-ubyte'))[:args.count]
    labels = read_idx(os.path.join(args.mnist, 't10k-labels-idx1-ubyte'))[:args.count]

    # The training net scaled pixels by 1/256: images in [0, 1] (as caffe.io.load_image gives them)
    # are scaled back to 0..255 by raw_scale, then by input_scale.
    classifier = caffe.Classifier(args.model, args.weights, image_dims=(28, 28),
                                  raw_scale=255, input_scale=0.00390625)
    inputs = [image[:, :, np.newaxis] / 255.0 for image in images]
    probabilities = classifier.predict(inputs, oversample=False)
    predicted = probabilities.argmax(axis=1)
    for i in range(min(10, len(images))):
        print(f'digit {i}: label {labels[i]}, predicted {predicted[i]} (p = {probabilities[i].max():.3f})')
    accuracy = float((predicted == labels).mean())
    print(f'accuracy: {accuracy:.4f} on {len(images)} test digits')
    return 0


if __name__ == '__main__':
    sys.exit(main())
