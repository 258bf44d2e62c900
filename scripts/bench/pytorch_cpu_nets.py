#!/usr/bin/python3
"""pytorch_cpu_nets.py — the PyTorch half of scripts/bench/cpu_nets.sh: the time of one training
forward + backward, or of one whole training step, on the CPU for Caffe's LeNet, cifar10_quick,
AlexNet, GoogLeNet and ResNet-50, in training mode.

The nets are not redefined here: LeNet comes from pytorch_lenet.py, Cifar10Quick from
pytorch_reference.py, AlexNet, GoogLeNet and ResNet-50 (in-place ReLUs, as Caffe's) from
pytorch_memory.py; each net's parameter count is checked against its Caffe prototxt's.

  --net lenet|cifar10_quick|alexnet|googlenet|resnet50
  --batch B        images per batch: constant 0.5, labels 0, as Cortado's DummyData
  --mode fwdbwd    gradients zeroed (kept allocated, set_to_none=False), forward, CrossEntropyLoss
                   (Caffe's SoftmaxWithLoss), backward: what `trainer time --phase=TRAIN` times
  --mode train     the same plus optimizer.step(): SGD momentum 0.9, weight decay and lr of the Caffe
                   solvers (LeNet lr 0.01, decay 5e-4; cifar10_quick lr 0.001, decay 4e-3; biases at
                   twice the lr, their lr_mult 2): what one `trainer train` iteration does
  --iters N        timed steps
  --warmup W       untimed steps first (default 1)
  --window K       0 (default): ms/step is the mean of the N timed steps; K > 0: the median over
                   windows of K consecutive steps (N a multiple of K), as cpu_nets.sh reads Cortado's
                   display lines
  --threads T      torch.set_num_threads

The last line is machine-readable:
"RESULT net=N mode=M batch=B iters=I warmup=W window=K threads=T ms_per_iter=X loss=L".
Run it with Debian's /usr/bin/python3 (python3-torch).
"""
import argparse
import os
import statistics
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_lenet import LeNet  # noqa: E402
from pytorch_memory import CAFFE_PARAMS, AlexNet, GoogLeNet, ResNet50  # noqa: E402
from pytorch_reference import Cifar10Quick  # noqa: E402

# net -> (constructor, input channels, input size, Caffe's parameter count)
NETS = {
    "lenet": (LeNet, 1, 28, 431_080),
    "cifar10_quick": (Cifar10Quick, 3, 32, 145_578),
    "alexnet": (AlexNet, 3, 227, CAFFE_PARAMS["alexnet"]),
    "googlenet": (GoogLeNet, 3, 224, CAFFE_PARAMS["googlenet"]),
    "resnet50": (lambda: ResNet50(inplace=True), 3, 224, CAFFE_PARAMS["resnet50"]),
}
# net -> (base_lr, weight_decay) of its Caffe solver, for --mode train
SOLVERS = {"lenet": (0.01, 5e-4), "cifar10_quick": (0.001, 4e-3)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--net", choices=sorted(NETS), required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--mode", choices=["fwdbwd", "train"], default="fwdbwd")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--window", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if args.batch < 1 or args.iters < 1 or args.threads < 1 or args.warmup < 0 or args.window < 0:
        sys.exit("--batch, --iters and --threads must be positive, --warmup and --window not negative")
    if args.window and args.iters % args.window:
        sys.exit("--iters must be a multiple of --window")
    if args.mode == "train" and args.net not in SOLVERS:
        sys.exit(f"--mode train has solver settings for {', '.join(sorted(SOLVERS))} only")
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)

    make, channels, size, caffe_params = NETS[args.net]
    model = make().train()
    params = sum(p.numel() for p in model.parameters())
    if params != caffe_params:
        sys.exit(f"{args.net}: {params} parameters, the Caffe prototxt has {caffe_params}")
    x = torch.full((args.batch, channels, size, size), 0.5)
    y = torch.zeros(args.batch, dtype=torch.long)
    criterion = nn.CrossEntropyLoss()
    opt = None
    if args.mode == "train":
        base_lr, decay = SOLVERS[args.net]
        weights = [p for name, p in model.named_parameters() if name.endswith("weight")]
        biases = [p for name, p in model.named_parameters() if name.endswith("bias")]
        opt = torch.optim.SGD([{"params": weights, "lr": base_lr}, {"params": biases, "lr": 2 * base_lr}],
                              lr=base_lr, momentum=0.9, weight_decay=decay)
    print(f"PyTorch {torch.__version__} on the CPU, {torch.get_num_threads()} threads: {args.net} "
          f"({params} parameters), batch {args.batch}, {args.mode}, {args.warmup} warm-up + "
          f"{args.iters} timed steps", flush=True)

    def step():
        model.zero_grad(set_to_none=False)
        loss = criterion(model(x), y)
        loss.backward()
        if opt is not None:
            opt.step()
        return loss

    loss = None
    t0 = time.perf_counter()
    for _ in range(args.warmup):
        loss = step()
    if args.warmup:
        print(f"Warm-up: {(time.perf_counter() - t0) * 1000:.1f} ms, loss {loss.item():.4f}", flush=True)
    times = []
    for i in range(args.iters):
        t0 = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - t0) * 1000)
        if not args.window:
            print(f"Iteration {i + 1}: {times[-1]:.2f} ms", flush=True)
        elif (i + 1) % args.window == 0:
            ms = sum(times[-args.window:]) / args.window
            print(f"Iteration {args.warmup + i + 1}: {ms:.3f} ms/iter over the last {args.window}, "
                  f"loss = {loss.item():.4g}", flush=True)
    if args.window:
        windows = [sum(times[i:i + args.window]) / args.window for i in range(0, len(times), args.window)]
        ms = statistics.median(windows)
        print(f"Median {ms:.3f} ms/iter over {len(windows)} windows of {args.window}")
    else:
        ms = sum(times) / len(times)
        print(f"Mean {ms:.3f} ms/iter over {len(times)} steps")
    print(f"RESULT net={args.net} mode={args.mode} batch={args.batch} iters={args.iters} "
          f"warmup={args.warmup} window={args.window} threads={args.threads} ms_per_iter={ms:.4f} "
          f"loss={loss.item():.4g}")


if __name__ == "__main__":
    main()
