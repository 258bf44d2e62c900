#!/usr/bin/python3
"""pytorch_reference.py — the PyTorch half of scripts/bench/gpu.sh: Caffe's LeNet and cifar10_quick
trained in PyTorch on the GPU with the recipes of models/mnist/lenet_solver.prototxt and
models/cifar10/cifar10_quick_solver.prototxt, and Caffe's ResNet-50 (models/resnet/, plain torch.nn:
torchvision is not needed), the data already on the GPU.

  --net lenet           MNIST training images from the IDX files (--data), batch 64, SGD momentum
                        0.9, base_lr 0.01 (biases x2), weight decay 5e-4, lr policy inv
  --net cifar10_quick   CIFAR-shaped images (random uint8, fixed seed, minus their mean), batch 100,
                        base_lr 0.001 (biases x2), momentum 0.9, weight decay 0.004, fixed lr
  --net resnet50        training throughput of Caffe's ResNet-50 (ResNet50 below) at --batch (default
                        128): one batch drawn once on the GPU, Gaussian images and classes uniform
                        in [0, 1000) (as Cortado's bench net fills its DummyData), SGD momentum 0.9,
                        lr 0.01, weight decay 1e-4; --warmup steps (default 10) untimed, then --iters
                        (default 30) timed; --precision fp32 or tf32 (default) for convolutions and
                        matmuls, or bf16 / fp16: automatic mixed precision (torch.autocast) with the
                        model and batch in channels_last, fp16 with a GradScaler (dynamic loss
                        scaling), as PyTorch's own performance guide trains
  --mode eager          a plain training loop (cudnn.benchmark on)
  --mode graph          the whole step (the learning rate, forward, backward, update) captured once as
                        a CUDA graph and replayed, the batch copied into the graph's static inputs
                        first (lenet and cifar10_quick), as torch.cuda.graphs documents whole-network
                        capture: warm-up steps on a side stream, gradients set to None before the
                        capture, backward and the optimizer step inside it
  --precision fp32|tf32 TF32 off or on for cuDNN convolutions and cuBLAS matmuls; without it the
                        small nets keep PyTorch's defaults (bf16 and fp16: resnet50 only)
  --device cpu          tries the script without a GPU (eager only)

The small nets' SGD is torch.optim.SGD(fused=True) with its learning rates as 1-element tensors on
the GPU (the inv policy's rate is computed there, from a step counter): a tensor rate in the default
foreach SGD is read back to the host every step (`alpha=-lr`), which a CUDA graph cannot capture
("operation not permitted when stream is capturing") and which makes every eager step wait.

Batches are taken in order, wrapping around, as Caffe's data layer reads. The training time is
measured from the first step (the first after --warmup) to a synchronise after the last (model
set-up, data upload and the graph's warm-up and capture excluded). The last lines are
machine-readable: "RESULT net=N mode=M iters=I train_s=T img_per_s=R peak_reserved_mib=P loss=L"
(resnet50 adds "batch=B precision=P warmup=W"), then on a GPU one "LIBRARY side=pytorch name=cudnn
version=V path=P" line per CUDA library PyTorch loaded (cuda_libraries.py). A failure (a capture
refused, out of memory) prints one line "ERROR <what>: <exception's first line>" before the traceback
and exits 1.
"""
import argparse
import os
import sys
import time
import traceback

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuda_libraries  # noqa: E402  (which cuDNN and cuBLAS this process loaded)
from pytorch_lenet import LeNet, read_idx  # noqa: E402  (the same LeNet as the CPU benchmark)


class Cifar10Quick(nn.Module):
    """Caffe's cifar10_quick: conv 32 5x5 p2 -> max 3/2 -> relu -> conv 32 5x5 p2 -> relu -> ave 3/2
    -> conv 64 5x5 p2 -> relu -> ave 3/2 -> ip 64 -> ip 10 (pooling rounds up, as Caffe's CEIL)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 32, 5, padding=2)
        self.conv3 = nn.Conv2d(32, 64, 5, padding=2)
        self.ip1 = nn.Linear(64 * 4 * 4, 64)
        self.ip2 = nn.Linear(64, 10)
        for layer, std in ((self.conv1, 1e-4), (self.conv2, 0.01), (self.conv3, 0.01), (self.ip1, 0.1),
                           (self.ip2, 0.1)):
            nn.init.normal_(layer.weight, 0.0, std)
            nn.init.zeros_(layer.bias)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 3, 2, ceil_mode=True))
        x = F.avg_pool2d(F.relu(self.conv2(x)), 3, 2, ceil_mode=True)
        x = F.avg_pool2d(F.relu(self.conv3(x)), 3, 2, ceil_mode=True)
        return self.ip2(self.ip1(x.flatten(1)))


class Bottleneck(nn.Module):
    """One block res{2..5}{a..f} of Caffe's ResNet-50: branch2a 1x1 (carrying the block's stride, as
    Caffe's prototxt does) -> BN -> ReLU -> branch2b 3x3 pad 1 -> BN -> ReLU -> branch2c 1x1 (4x the
    width) -> BN, plus the shortcut: identity, or in each stage's first block branch1, a 1x1
    projection with the same stride -> BN; then ReLU. Convolutions without bias (bias_term: false);
    Caffe's BatchNorm + Scale pair is one affine BatchNorm2d (eps 1e-5 both). inplace: the ReLUs
    overwrite their input, as Caffe's do (memory.sh); off by default (gpu.sh's runs)."""

    def __init__(self, cin, width, stride, project, inplace=False):
        super().__init__()
        self.inplace = inplace
        cout = 4 * width
        self.branch2a = nn.Conv2d(cin, width, 1, stride, bias=False)
        self.bn2a = nn.BatchNorm2d(width)
        self.branch2b = nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.bn2b = nn.BatchNorm2d(width)
        self.branch2c = nn.Conv2d(width, cout, 1, bias=False)
        self.bn2c = nn.BatchNorm2d(cout)
        self.branch1 = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                        if project else None)

    def forward(self, x):
        y = F.relu(self.bn2a(self.branch2a(x)), inplace=self.inplace)
        y = F.relu(self.bn2b(self.branch2b(y)), inplace=self.inplace)
        y = self.bn2c(self.branch2c(y))
        return F.relu(y + (x if self.branch1 is None else self.branch1(x)), inplace=self.inplace)


class ResNet50(nn.Module):
    """Caffe's ResNet-50 (Kaiming He's original, models/resnet/ResNet-50-deploy.prototxt): conv1 7x7/2
    pad 3, 64, with a bias -> BN -> ReLU -> max pool 3/2 (rounding up, as Caffe: 112 -> 56) -> stages
    res2..res5 of 3, 4, 6, 3 bottlenecks, widths 64, 128, 256, 512 (x4 out), stride 1, 2, 2, 2 on
    each stage's first block -> average pool 7/1 -> fc1000. 53 convolutions, 25.6 M parameters
    (25,557,096, as the prototxt's). inplace: in-place ReLUs, as Caffe's (see Bottleneck)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3)
        self.bn_conv1 = nn.BatchNorm2d(64)
        blocks, cin = [], 64
        for width, count, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(count):
                blocks.append(Bottleneck(cin, width, stride if i == 0 else 1, project=i == 0, inplace=inplace))
                cin = 4 * width
        self.blocks = nn.Sequential(*blocks)
        self.fc1000 = nn.Linear(2048, 1000)

    def forward(self, x):
        x = F.relu(self.bn_conv1(self.conv1(x)), inplace=self.inplace)
        x = F.max_pool2d(x, 3, 2, ceil_mode=True)
        x = F.avg_pool2d(self.blocks(x), 7, 1)
        return self.fc1000(x.flatten(1))


def report(net, mode, iters, batch, start, loss, cuda, extra=""):
    """Waits for the device, then prints the RESULT line (the time since `start`, perf_counter)."""
    if cuda:
        torch.cuda.synchronize()
    train_s = time.perf_counter() - start
    peak = torch.cuda.max_memory_reserved() / 2**20 if cuda else 0.0
    print(f"RESULT net={net} mode={mode} iters={iters} train_s={train_s:.3f} "
          f"img_per_s={iters * batch / train_s:.0f} peak_reserved_mib={peak:.0f} loss={loss.item():.4f}{extra}")
    if cuda:
        print(f"PYTORCH torch={torch.__version__} cuda={torch.version.cuda} cudnn={torch.backends.cudnn.version()}")
        cuda_libraries.report("pytorch", cuda_libraries.loaded())
    sys.stdout.flush()


def set_precision(precision):
    """TF32 on (tf32) or off (fp32) for cuDNN convolutions and cuBLAS matmuls: PyTorch 2.9's
    fp32_precision settings where they exist (the allow_tf32 flags are deprecated there, and mixing
    the two is refused), else torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32.
    Returns what was set, for the log."""
    tf32 = precision == "tf32"
    try:
        torch.backends.cuda.matmul.fp32_precision = "tf32" if tf32 else "ieee"
        torch.backends.cudnn.conv.fp32_precision = "tf32" if tf32 else "ieee"
        return (f"cuda.matmul.fp32_precision={torch.backends.cuda.matmul.fp32_precision} "
                f"cudnn.conv.fp32_precision={torch.backends.cudnn.conv.fp32_precision}")
    except (AttributeError, AssertionError):  # before PyTorch 2.9 (1.13 raises AssertionError)
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        return (f"cuda.matmul.allow_tf32={torch.backends.cuda.matmul.allow_tf32} "
                f"cudnn.allow_tf32={torch.backends.cudnn.allow_tf32}")


def train_resnet50(args, device):
    """ResNet-50 training throughput: --warmup untimed steps (cudnn.benchmark picks its algorithms in
    the first), then --iters timed steps on one fixed batch already on the device."""
    cuda = device.type == "cuda"
    if args.mode != "eager":
        sys.exit("--net resnet50 runs --mode eager only")
    batch = args.batch or 128
    iters = args.iters or 30
    warmup = 10 if args.warmup is None else args.warmup
    torch.manual_seed(1)
    model = ResNet50().to(device).train()
    # Drawn once, on the device, as Cortado's bench net (models/resnet/make_train_bench.sh) fills its
    # DummyData once: Gaussian images (never a constant, which can run faster) and valid classes.
    x = torch.randn(batch, 3, 224, 224, device=device)
    y = torch.randint(0, 1000, (batch,), device=device)
    amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.precision)
    if amp is not None:  # mixed precision the way PyTorch recommends it: autocast, channels_last
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=amp == torch.float16 and cuda)

    def step():
        opt.zero_grad(set_to_none=False)
        with torch.autocast(device.type, dtype=amp or torch.float32, enabled=amp is not None):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    params = sum(p.numel() for p in model.parameters())
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name() if cuda else 'cpu'}: resnet50 "
          f"({params} parameters), eager, batch {batch}, {args.precision}: {args.precision_set}, "
          f"{warmup} warm-up + {iters} timed iterations", flush=True)
    loss = None
    for _ in range(warmup):
        loss = step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for i in range(iters):
        loss = step()
        if (i + 1) % 10 == 0:
            print(f"Iteration {warmup + i + 1}, loss = {loss.item():.4f}", flush=True)
    report("resnet50", "eager", iters, batch, start, loss, cuda,
           f" batch={batch} precision={args.precision} warmup={warmup}")


def load_data(net, data_dir, device):
    if net == "lenet":
        images = read_idx(os.path.join(data_dir, "train-images-idx3-ubyte"), 2051)
        labels = read_idx(os.path.join(data_dir, "train-labels-idx1-ubyte"), 2049)
        x = torch.from_numpy(images.astype(np.float32)).mul_(0.00390625)
        return x.to(device), torch.from_numpy(labels.astype(np.int64)).to(device)
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, size=(10000, 3, 32, 32), dtype=np.uint8).astype(np.float32)
    images -= images.mean(axis=0, keepdims=True)  # Caffe's mean_file subtraction
    labels = rng.integers(0, 10, size=10000)
    return torch.from_numpy(images).to(device), torch.from_numpy(labels.astype(np.int64)).to(device)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--net", choices=["lenet", "cifar10_quick", "resnet50"], required=True)
    parser.add_argument("--mode", choices=["eager", "graph"], default="eager")
    parser.add_argument("--iters", type=int, default=0,
                        help="default: 10000 (lenet), 5000 (cifar10_quick), 30 timed (resnet50)")
    parser.add_argument("--batch", type=int, default=0, help="resnet50 only (default 128)")
    parser.add_argument("--warmup", type=int, default=None, help="untimed steps first (default: 10 for resnet50)")
    parser.add_argument("--precision", choices=["fp32", "tf32", "bf16", "fp16"], default=None,
                        help="TF32 off or on (default: PyTorch's own settings; tf32 for resnet50); resnet50 "
                             "also bf16 or fp16 (autocast, channels_last)")
    parser.add_argument("--data", default=os.path.join(here, "..", "..", "data", "mnist"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu to try the script without a GPU")
    args = parser.parse_args()
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    if cuda:
        torch.backends.cudnn.benchmark = True
    if args.net == "resnet50" and args.precision is None:
        args.precision = "tf32"
    if args.precision in ("bf16", "fp16") and args.net != "resnet50":
        sys.exit("--precision bf16 and fp16 are for --net resnet50")
    if args.precision in ("bf16", "fp16"):  # what autocast leaves in float32 runs in TF32, as Cortado's default
        args.precision_set = set_precision("tf32") + f", autocast {args.precision}, channels_last"
    else:
        args.precision_set = set_precision(args.precision) if args.precision else "PyTorch's defaults"
    if args.net == "resnet50":
        train_resnet50(args, device)
        return
    if args.batch or args.warmup is not None:
        sys.exit("--batch and --warmup are for --net resnet50")
    train_small(args, device)


def capture_step(step_fn, model, opt, static_x, static_y):
    """The whole training step captured as one CUDA graph, as torch.cuda.graphs documents it: three
    warm-up steps on a side stream (cudnn.benchmark picks its algorithms, the optimizer creates its
    momentum buffers, outside the capture), the gradients set to None so the captured backward
    allocates them from the graph's private pool, then forward, backward and the optimizer step
    inside the capture. Returns the graph and its static loss."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step_fn(static_x, static_y)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = step_fn(static_x, static_y)
    return graph, static_loss


def train_small(args, device):
    """LeNet or cifar10_quick with Caffe's recipe, eager or as one CUDA graph per step."""
    cuda = device.type == "cuda"
    lenet = args.net == "lenet"
    iters = args.iters or (10000 if lenet else 5000)
    batch = 64 if lenet else 100
    base_lr, momentum, decay = (0.01, 0.9, 5e-4) if lenet else (0.001, 0.9, 0.004)
    torch.manual_seed(1)

    x_all, y_all = load_data(args.net, args.data, device)
    n = x_all.shape[0]
    model = (LeNet() if lenet else Cifar10Quick()).to(device)
    fresh = {k: v.clone() for k, v in model.state_dict().items()}  # the initial weights, for after the warm-up
    weights = [p for name, p in model.named_parameters() if name.endswith("weight")]
    biases = [p for name, p in model.named_parameters() if name.endswith("bias")]
    # The learning rates are 1-element tensors on the device, read there by the fused SGD (no host
    # read-back: see the module's note), so a captured graph uses each step's value.
    lr_w = torch.full((), base_lr, device=device)
    lr_b = torch.full((), 2 * base_lr, device=device)
    step_count = torch.zeros((), device=device)  # the iteration whose rate lr_w holds
    extra = {"fused": True} if cuda else {}  # PyTorch's CPU path keeps its default SGD (--device cpu)
    opt = torch.optim.SGD([{"params": weights, "lr": lr_w}, {"params": biases, "lr": lr_b}],
                          lr=lr_w, momentum=momentum, weight_decay=decay, **extra)

    def set_rate():
        """Caffe's rate for the iteration in step_count, on the device: inv for LeNet (gamma 1e-4,
        power 0.75), fixed for cifar10_quick. Then step_count counts this iteration."""
        if lenet:
            lr_w.copy_((step_count * 1e-4 + 1).pow(-0.75) * base_lr)
            lr_b.copy_(lr_w * 2)
        step_count.add_(1)

    def batch_at(step):
        lo = (step * batch) % n
        if lo + batch <= n:
            return x_all[lo:lo + batch], y_all[lo:lo + batch]
        idx = torch.arange(lo, lo + batch, device=device) % n
        return x_all[idx], y_all[idx]

    def step_fn(x, y):
        set_rate()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    graph = None
    static_x, static_y = (t.clone() for t in batch_at(0))
    if args.mode == "graph":
        if not cuda:
            sys.exit("--mode graph needs --device cuda")
        try:
            graph, static_loss = capture_step(step_fn, model, opt, static_x, static_y)
        except Exception as e:  # noqa: BLE001  (the bench prints why, whatever it is)
            fail("graph capture failed", e)
        # Train from the initial weights, as eager does: everything the warm-up changed is reset in
        # place (the graph holds these tensors' addresses).
        with torch.no_grad():
            for name, value in model.state_dict().items():
                value.copy_(fresh[name])
            for state in opt.state.values():
                if state.get("momentum_buffer") is not None:
                    state["momentum_buffer"].zero_()
            step_count.zero_()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()

    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name() if cuda else 'cpu'}: {args.net}, "
          f"{args.mode}, batch {batch}, {iters} iterations, fused SGD: {bool(extra)}", flush=True)
    start = time.perf_counter()
    loss = None
    for step in range(iters):
        x, y = batch_at(step)
        if graph is not None:
            static_x.copy_(x)
            static_y.copy_(y)
            graph.replay()
            loss = static_loss
        else:
            loss = step_fn(x, y)
        if (step + 1) % 1000 == 0:
            print(f"Iteration {step + 1}, loss = {loss.item():.4f}", flush=True)
    report(args.net, args.mode, iters, batch, start, loss, cuda)


def fail(what, error):
    """One line the bench puts in its summary, then the traceback; exit status 1."""
    first = (str(error).strip().splitlines() or [""])[0]
    print(f"ERROR {what}: {type(error).__name__}: {first}", flush=True)
    traceback.print_exc()
    sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001  (a CUDA error, out of memory: one line for the summary)
        fail("pytorch_reference.py", e)
