#!/usr/bin/python3
"""pytorch_lenet.py — the PyTorch half of scripts/bench/cpu_lenet.sh.

Trains Caffe's LeNet (models/mnist/lenet_train_test.prototxt) on the CPU with the same recipe as
models/mnist/lenet_solver.prototxt: batch 64, SGD momentum 0.9, base_lr 0.01 (biases ×2, their
lr_mult), weight_decay 5e-4, lr policy inv (gamma 1e-4, power 0.75), Xavier weights, zero biases.
The MNIST training images are read from the IDX files into one tensor, scaled by 1/256 (Caffe's
scale 0.00390625) and taken in order, 64 at a time, wrapping around like Caffe's data layer.

Timing: the first --warmup steps are not timed; then each window of --display steps is timed with
a host clock (the CPU is synchronous) and the median window gives ms/iteration. The last line is
machine-readable: "RESULT ms_per_iter=X wall_s=Y loss=Z".

Run it with Debian's /usr/bin/python3 (python3-torch, python3-numpy).
"""
import argparse
import math
import os
import statistics
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def read_idx(path, magic):
    """An IDX file as a uint8 array: images (magic 2051) N×1×H×W, labels (2049) N."""
    with open(path, "rb") as f:
        raw = f.read()
    found, count = struct.unpack(">II", raw[:8])
    if found != magic:
        sys.exit(f"{path}: IDX magic {found}, expected {magic}")
    if magic == 2051:
        rows, cols = struct.unpack(">II", raw[8:16])
        return np.frombuffer(raw, np.uint8, offset=16).reshape(count, 1, rows, cols)
    return np.frombuffer(raw, np.uint8, offset=8)


class LeNet(nn.Module):
    """conv 20 5×5 → max 2/2 → conv 50 5×5 → max 2/2 → ip 500 → ReLU → ip 10."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 20, 5)
        self.conv2 = nn.Conv2d(20, 50, 5)
        self.ip1 = nn.Linear(50 * 4 * 4, 500)
        self.ip2 = nn.Linear(500, 10)
        for layer in (self.conv1, self.conv2, self.ip1, self.ip2):
            # Caffe's xavier filler: uniform ±sqrt(3 / fan_in), fan_in = count / num_output.
            fan_in = layer.weight[0].numel()
            bound = math.sqrt(3.0 / fan_in)
            nn.init.uniform_(layer.weight, -bound, bound)
            nn.init.zeros_(layer.bias)

    def forward(self, x):
        x = F.max_pool2d(self.conv1(x), 2, 2)
        x = F.max_pool2d(self.conv2(x), 2, 2)
        x = F.relu(self.ip1(x.flatten(1)))
        return self.ip2(x)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.path.join(here, "..", "..", "data", "mnist"),
                        help="folder with train-images-idx3-ubyte and train-labels-idx1-ubyte")
    parser.add_argument("--iters", type=int, default=1000, help="training steps in all")
    parser.add_argument("--warmup", type=int, default=100, help="untimed steps first")
    parser.add_argument("--display", type=int, default=100, help="steps per timed window")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.iters - args.warmup < args.display:
        sys.exit("--iters must leave at least one --display window after --warmup")

    wall_start = time.perf_counter()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    images = read_idx(os.path.join(args.data, "train-images-idx3-ubyte"), 2051)
    labels = read_idx(os.path.join(args.data, "train-labels-idx1-ubyte"), 2049)
    x_all = torch.from_numpy(images.astype(np.float32)).mul_(0.00390625)
    y_all = torch.from_numpy(labels.astype(np.int64))
    n = x_all.shape[0]

    model = LeNet()
    weights = [p for name, p in model.named_parameters() if name.endswith("weight")]
    biases = [p for name, p in model.named_parameters() if name.endswith("bias")]
    base_lr, gamma, power = 0.01, 1e-4, 0.75
    opt = torch.optim.SGD([{"params": weights, "lr": base_lr},
                           {"params": biases, "lr": 2 * base_lr}],
                          lr=base_lr, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda it: (1 + gamma * it) ** -power)

    def batch(step):
        lo = (step * args.batch) % n
        hi = lo + args.batch
        if hi <= n:
            return x_all[lo:hi], y_all[lo:hi]
        idx = torch.arange(lo, hi) % n
        return x_all[idx], y_all[idx]

    def train_step(step):
        x, y = batch(step)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        sched.step()
        return loss

    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"batch {args.batch}, {args.iters} steps ({args.warmup} warm-up)", flush=True)
    step = 0
    while step < args.warmup:
        train_step(step)
        step += 1

    windows = []  # ms per step of each timed window
    loss = None
    while step + args.display <= args.iters:
        t0 = time.perf_counter()
        for _ in range(args.display):
            loss = train_step(step)
            step += 1
        loss_value = loss.item()
        ms = (time.perf_counter() - t0) * 1000.0 / args.display
        windows.append(ms)
        print(f"Iteration {step}: {ms:.3f} ms/iter, loss = {loss_value:.4f}", flush=True)
    while step < args.iters:  # a last partial window, not timed
        loss = train_step(step)
        step += 1

    median = statistics.median(windows)
    wall = time.perf_counter() - wall_start
    print(f"PyTorch: median {median:.3f} ms/iter over {len(windows)} windows of {args.display}; "
          f"wall {wall:.1f}s")
    print(f"RESULT ms_per_iter={median:.4f} wall_s={wall:.2f} loss={loss.item():.4f}")


if __name__ == "__main__":
    main()
