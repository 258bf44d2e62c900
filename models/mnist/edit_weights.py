#!/usr/bin/env python3
"""edit_weights.py: net surgery on a trained LeNet through Cortado's Python interface (pycaffe's
API): makes LeNet fully convolutional by rewriting its inner-product layers as convolutions and
copying their weights in, saves the new net and weights, and checks that the new net, run on a
56x56 canvas of four test digits, gives at each digit's position the classification LeNet gives.

Usage (from the repository root):
  PYTHONPATH=build/python python3 models/mnist/edit_weights.py models/mnist/lenet_iter_10000.caffemodel OUT_DIR
      [--mnist data/mnist]
Writes OUT_DIR/lenet_full_conv.prototxt and OUT_DIR/lenet_full_conv.caffemodel; exits 1 if the
check fails.
"""
import argparse
import os
import sys

import numpy as np
from google.protobuf import text_format

import cortado as caffe
from classify_digits import read_idx  # beside this script
from cortado.proto import caffe_pb2

HERE = os.path.dirname(os.path.abspath(__file__))
SCALE = 0.00390625  # the training net's pixel scale


def fully_convolutional(deploy, size):
    """LeNet's deploy net with ip1 and ip2 as convolutions (kernel 4 over pool2's 4x4 maps, then 1x1),
    named ip1-conv and ip2-conv, on one size x size image."""
    net = caffe_pb2.NetParameter()
    with open(deploy) as f:
        text_format.Merge(f.read(), net)
    net.name = 'LeNet-full-conv'
    for layer in net.layer:
        if layer.type == 'Input':
            layer.input_param.shape[0].dim[:] = [1, 1, size, size]
        if layer.type == 'InnerProduct':
            ip = layer.inner_product_param
            layer.type = 'Convolution'
            layer.convolution_param.num_output = ip.num_output
            layer.convolution_param.kernel_size.append(4 if layer.name == 'ip1' else 1)
            layer.convolution_param.weight_filler.CopyFrom(ip.weight_filler)
            layer.convolution_param.bias_filler.CopyFrom(ip.bias_filler)
            layer.ClearField('inner_product_param')
            layer.name += '-conv'
    return net


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('weights', help='a trained LeNet .caffemodel')
    parser.add_argument('out_dir', help='where the fully-convolutional net and weights go')
    parser.add_argument('--model', default=os.path.join(HERE, 'lenet.prototxt'))
    parser.add_argument('--mnist', default='data/mnist')
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)

    net = caffe.Net(args.model, args.weights, caffe.TEST)
    full_path = os.path.join(args.out_dir, 'lenet_full_conv.prototxt')
    with open(full_path, 'w') as f:
        f.write(str(fully_convolutional(args.model, 56)))
    full = caffe.Net(full_path, caffe.TEST)

    # The surgery: the convolutions take the inner products' weights, value for value.
    for name in ('ip1', 'ip2'):
        weights, bias = net.params[name]
        conv_weights, conv_bias = full.params[name + '-conv']
        print(f'{name}: {weights.data.shape} -> {name}-conv: {conv_weights.data.shape}')
        conv_weights.data.flat = weights.data.flat
        conv_bias.data[...] = bias.data
    # Every other layer keeps its weights.
    for name in ('conv1', 'conv2'):
        for mine, theirs in zip(full.params[name], net.params[name]):
            mine.data[...] = theirs.data
    out_weights = os.path.join(args.out_dir, 'lenet_full_conv.caffemodel')
    full.save(out_weights)

    # The check: four digits on a 56x56 canvas give an 8x8 map of class scores, one per 28x28 window
    # at a stride of 4 pixels; the corners are the four digits.
    digits = read_idx(os.path.join(args.mnist, 't10k-images-idx3-ubyte'))[:4].astype(np.float32) * SCALE
    canvas = np.zeros((56, 56), np.float32)
    corners = [(0, 0), (0, 28), (28, 0), (28, 28)]
    for digit, (row, col) in zip(digits, corners):
        canvas[row:row + 28, col:col + 28] = digit
    scores = full.forward(data=canvas[np.newaxis, np.newaxis])['prob'][0]
    print(f'fully-convolutional output: {scores.shape} (classes x rows x columns)')
    net.blobs['data'].reshape(4, 1, 28, 28)
    single = net.forward(data=digits[:, np.newaxis])['prob']
    ok = True
    for k, (row, col) in enumerate(corners):
        at = scores[:, row // 4, col // 4]
        same = np.allclose(at, single[k], rtol=1e-3, atol=1e-5)
        ok &= same and at.argmax() == single[k].argmax()
        print(f'digit {k} at ({row}, {col}): LeNet says {single[k].argmax()}, '
              f'the fully-convolutional net says {at.argmax()} ({"same scores" if same else "DIFFERENT"})')
    print(f'wrote {full_path} and {out_weights}')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
