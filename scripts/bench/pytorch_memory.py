#!/usr/bin/python3
"""pytorch_memory.py — the PyTorch half of scripts/bench/memory.sh: peak resident memory and the time
of one forward + backward on the CPU for Caffe's ResNet-50, GoogLeNet and AlexNet, written in plain
torch.nn from their deploy prototxts (models/resnet/ResNet-50-deploy.prototxt,
models/imagenet/{googlenet,alexnet}/deploy.prototxt), in training mode.

  --net resnet50|googlenet|alexnet   one net per process, so peaks do not mix
  --batch B                          images per batch (constant 0.5, labels 0, as Cortado's DummyData)
  --iters N                          timed iterations, after one untimed warm-up forward + backward
  --threads T                        torch.set_num_threads

Each iteration is what Cortado's `trainer time --phase=TRAIN` times: gradients zeroed (kept
allocated, set_to_none=False: PyTorch 1.13's default, and like Caffe's diffs), forward,
CrossEntropyLoss (Caffe's SoftmaxWithLoss), backward; no parameter update. Caffe's in-place ReLUs are
nn.ReLU(inplace=True); Caffe's BatchNorm + Scale is an affine BatchNorm2d on batch statistics; Caffe's
pooling rounds up (ceil_mode=True); its ACROSS_CHANNELS LRN is nn.LocalResponseNorm (alpha divided by
the size in both). Weights keep PyTorch's default initialisation (timing and memory do not depend on
the values).

The peak is the whole process's resident set (getrusage ru_maxrss, KiB): the interpreter and libtorch
included; base_rss_kib is the resident set just before the model is built, for reference. The last
line is machine-readable:
"RESULT net=N batch=B iters=I threads=T ms_per_iter=M peak_rss_kib=P base_rss_kib=R params=C loss=L".
"""
import argparse
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_reference import ResNet50  # noqa: E402  (Caffe's ResNet-50, shared with gpu.sh)

# Parameter counts of the Caffe prototxts (learnable blobs: convolution and inner-product weights and
# biases, Scale's gamma and beta; BatchNorm's running statistics are not parameters), counted from the
# deploy nets' layer shapes. The torch nets below must match them exactly.
CAFFE_PARAMS = {"resnet50": 25_557_096, "googlenet": 6_998_552, "alexnet": 60_965_224}


class Inception(nn.Module):
    """One inception_* module of Caffe's GoogLeNet: four branches concatenated on channels — 1x1;
    1x1 reduce -> 3x3 pad 1; 1x1 reduce -> 5x5 pad 2; max pool 3/1 pad 1 -> 1x1 projection — each
    convolution followed by an in-place ReLU, as in the prototxt."""

    def __init__(self, cin, c1, c3r, c3, c5r, c5, proj):
        super().__init__()

        def conv(i, o, k):
            return [nn.Conv2d(i, o, k, padding=k // 2), nn.ReLU(inplace=True)]

        self.b1 = nn.Sequential(*conv(cin, c1, 1))
        self.b3 = nn.Sequential(*conv(cin, c3r, 1), *conv(c3r, c3, 3))
        self.b5 = nn.Sequential(*conv(cin, c5r, 1), *conv(c5r, c5, 5))
        self.bp = nn.Sequential(nn.MaxPool2d(3, 1, 1, ceil_mode=True), *conv(cin, proj, 1))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b3(x), self.b5(x), self.bp(x)], 1)


class GoogLeNet(nn.Module):
    """Caffe's bvlc_googlenet deploy net (no auxiliary classifiers): conv1 7x7/2 pad 3, 64 -> ReLU ->
    max pool 3/2 -> LRN 5 -> conv2/3x3_reduce 1x1 64 -> ReLU -> conv2/3x3 3x3 pad 1, 192 -> ReLU -> LRN
    5 -> max pool 3/2 -> inception 3a, 3b -> max pool 3/2 -> 4a..4e -> max pool 3/2 -> 5a, 5b -> average
    pool 7/1 -> dropout 0.4 (in place, as Caffe's: average pooling's backward does not need its
    output) -> loss3/classifier 1024 -> 1000. 224 -> 112 -> 56 -> 28 -> 14 -> 7 -> 1 (pooling rounds up).
    6,998,552 parameters, the same as the Caffe prototxt (CAFFE_PARAMS, checked in main)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3), nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, ceil_mode=True), nn.LocalResponseNorm(5, 1e-4, 0.75),
            nn.Conv2d(64, 64, 1), nn.ReLU(inplace=True),
            nn.Conv2d(64, 192, 3, padding=1), nn.ReLU(inplace=True),
            nn.LocalResponseNorm(5, 1e-4, 0.75), nn.MaxPool2d(3, 2, ceil_mode=True))
        self.inceptions = nn.Sequential(
            Inception(192, 64, 96, 128, 16, 32, 32),      # 3a -> 256
            Inception(256, 128, 128, 192, 32, 96, 64),    # 3b -> 480
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Inception(480, 192, 96, 208, 16, 48, 64),     # 4a -> 512
            Inception(512, 160, 112, 224, 24, 64, 64),    # 4b -> 512
            Inception(512, 128, 128, 256, 24, 64, 64),    # 4c -> 512
            Inception(512, 112, 144, 288, 32, 64, 64),    # 4d -> 528
            Inception(528, 256, 160, 320, 32, 128, 128),  # 4e -> 832
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Inception(832, 256, 160, 320, 32, 128, 128),  # 5a -> 832
            Inception(832, 384, 192, 384, 48, 128, 128))  # 5b -> 1024
        self.drop = nn.Dropout(0.4, inplace=True)
        self.classifier = nn.Linear(1024, 1000)

    def forward(self, x):
        x = F.avg_pool2d(self.inceptions(self.stem(x)), 7, 1)
        return self.classifier(self.drop(x.flatten(1)))


class AlexNet(nn.Module):
    """Caffe's bvlc_alexnet deploy net: conv1 11x11/4, 96 -> ReLU -> LRN 5 -> max pool 3/2 -> conv2
    5x5 pad 2, 256, group 2 -> ReLU -> LRN 5 -> max pool 3/2 -> conv3 3x3 pad 1, 384 -> ReLU -> conv4
    384, group 2 -> ReLU -> conv5 256, group 2 -> ReLU -> max pool 3/2 -> fc6 9216 -> 4096 -> ReLU ->
    dropout 0.5 -> fc7 4096 -> ReLU -> dropout 0.5 -> fc8 1000. 227 -> 55 -> 27 -> 13 -> 6.
    60,965,224 parameters, as the prototxt's. The dropouts are not in place (Caffe's are): autograd
    refuses an in-place op on the in-place ReLU's output, which ReLU's backward needs."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 96, 11, 4), nn.ReLU(inplace=True),
            nn.LocalResponseNorm(5, 1e-4, 0.75), nn.MaxPool2d(3, 2, ceil_mode=True),
            nn.Conv2d(96, 256, 5, padding=2, groups=2), nn.ReLU(inplace=True),
            nn.LocalResponseNorm(5, 1e-4, 0.75), nn.MaxPool2d(3, 2, ceil_mode=True),
            nn.Conv2d(256, 384, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 384, 3, padding=1, groups=2), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, 3, padding=1, groups=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, ceil_mode=True))
        self.classifier = nn.Sequential(
            nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
            nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
            nn.Linear(4096, 1000))

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


NETS = {"resnet50": (lambda: ResNet50(inplace=True), 224),
        "googlenet": (GoogLeNet, 224),
        "alexnet": (AlexNet, 227)}


def rss_kib(field="VmRSS"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--net", choices=sorted(NETS), required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if args.batch < 1 or args.iters < 1 or args.threads < 1:
        sys.exit("--batch, --iters and --threads must be positive")
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    base = rss_kib()

    make, size = NETS[args.net]
    model = make().train()
    params = sum(p.numel() for p in model.parameters())
    if params != CAFFE_PARAMS[args.net]:
        sys.exit(f"{args.net}: {params} parameters, the Caffe prototxt has {CAFFE_PARAMS[args.net]}")
    x = torch.full((args.batch, 3, size, size), 0.5)
    y = torch.zeros(args.batch, dtype=torch.long)
    criterion = nn.CrossEntropyLoss()
    print(f"PyTorch {torch.__version__} on the CPU, {torch.get_num_threads()} threads: {args.net} "
          f"({params} parameters), batch {args.batch}, 1 warm-up + {args.iters} timed forward+backward",
          flush=True)

    def step():
        model.zero_grad(set_to_none=False)
        loss = criterion(model(x), y)
        loss.backward()
        return loss

    t0 = time.perf_counter()
    loss = step()
    print(f"Warm-up: {(time.perf_counter() - t0) * 1000:.1f} ms, loss {loss.item():.4f}", flush=True)
    total = 0.0
    for i in range(args.iters):
        t0 = time.perf_counter()
        loss = step()
        ms = (time.perf_counter() - t0) * 1000
        total += ms
        print(f"Iteration {i + 1}: {ms:.1f} ms", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"VmHWM {rss_kib('VmHWM')} KiB, VmRSS now {rss_kib()} KiB, before the model {base} KiB")
    print(f"RESULT net={args.net} batch={args.batch} iters={args.iters} threads={args.threads} "
          f"ms_per_iter={total / args.iters:.2f} peak_rss_kib={peak} base_rss_kib={base} params={params} "
          f"loss={loss.item():.4f}")


if __name__ == "__main__":
    main()
