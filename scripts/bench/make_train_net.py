#!/usr/bin/python3
"""make_train_net.py — turns a Caffe deploy prototxt into a training net for benchmarks, so the deploy
net stays the one copy of the topology (scripts/bench/memory.sh uses it for ResNet-50, GoogLeNet and
AlexNet; models/resnet/make_train_bench.sh does the same for ResNet-50 alone, in awk):

  - the input, in any of its three deploy spellings (`input:` with four `input_dim:`, `input:` with an
    `input_shape { dim ... }`, or an `Input` layer with `input_param { shape { dim ... } }`), becomes a
    DummyData layer with tops data (BATCH x C x H x W, C, H and W from the deploy net, constant 0.5) and
    label (BATCH, constant 0), so a batch costs nothing to read;
  - a Convolution without a weight_filler gets MSRA, an InnerProduct without one gaussian std 0.01
    (Caffe's default filler is constant 0, which would leave every weight at zero); fillers the deploy
    net has are kept;
  - BatchNorm trains on batch statistics (`use_global_stats` dropped);
  - the last layer, a Softmax on the last inner product, becomes SoftmaxWithLoss "loss" on that inner
    product and label.

Usage: make_train_net.py DEPLOY BATCH OUT      writes OUT and prints a one-line summary to stderr.

The prototxt is parsed as protobuf text format (fields, nested messages, `name: { ... }` or
`name { ... }`, # comments) and written back with two-space indentation; comments are dropped.
"""
import os
import re
import sys

# tools/extra/atomic_file.py: files written whole or not at all.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools', 'extra'))
import atomic_file  # noqa: E402

TOKEN = re.compile(r'\s+|#[^\n]*|"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|[{}:;,]|[^\s{}:;,#"\']+')


def tokens(text):
    pos = 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            sys.exit(f"make_train_net.py: cannot parse at {text[pos:pos + 40]!r}")
        pos = m.end()
        t = m.group()
        if not t.isspace() and not t.startswith("#"):
            yield t


def parse(toks, top=True):
    """A message as a list of [key, value]: value a token (quotes kept) or a list (a nested message)."""
    fields = []
    for key in toks:
        if key == "}":
            if top:
                sys.exit("make_train_net.py: unbalanced '}'")
            return fields
        if key in (";", ","):
            continue
        t = next(toks)
        if t == ":":
            t = next(toks)
        if t == "{":
            fields.append([key, parse(toks, top=False)])
        else:
            fields.append([key, t])
    if not top:
        sys.exit("make_train_net.py: missing '}'")
    return fields


def dump(fields, indent=0):
    out = []
    for key, value in fields:
        pad = "  " * indent
        if isinstance(value, list):
            out.append(f"{pad}{key} {{")
            out.extend(dump(value, indent + 1))
            out.append(f"{pad}}}")
        else:
            out.append(f"{pad}{key}: {value}")
    return out


def get(fields, key):
    return [v for k, v in fields if k == key]


def one(fields, key, default=None):
    values = get(fields, key)
    return values[0] if values else default


def unquote(s):
    return s[1:-1] if s and s[0] in "\"'" else s


def dims_of(shape):
    return [int(d) for d in get(shape, "dim")]


def main():
    if len(sys.argv) != 4 or not re.fullmatch(r"[1-9][0-9]*", sys.argv[2]):
        sys.exit("usage: make_train_net.py DEPLOY BATCH OUT")
    deploy, batch, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    try:
        with open(deploy) as f:
            net = parse(tokens(f.read()))
    except OSError as e:
        sys.exit(f"make_train_net.py: cannot read {deploy}: {e.strerror}")
    except UnicodeDecodeError as e:
        sys.exit(f"make_train_net.py: {deploy} is not a text prototxt (byte {e.start} is not UTF-8)")

    # The input: top-level `input` + `input_dim` / `input_shape`, or an Input layer.
    inputs = [unquote(v) for v in get(net, "input")]
    shapes = [dims_of(s) for s in get(net, "input_shape")]
    if get(net, "input_dim"):
        shapes.append([int(d) for d in get(net, "input_dim")])
    input_layers = [l for k, l in net if k == "layer" and unquote(one(l, "type", "")) == "Input"]
    for layer in input_layers:
        inputs += [unquote(t) for t in get(layer, "top")]
        shapes += [dims_of(s) for s in get(one(layer, "input_param", []), "shape")]
    if len(inputs) != 1 or len(shapes) != 1 or len(shapes[0]) != 4:
        sys.exit(f"make_train_net.py: {deploy}: expected one 4-D input, found {inputs} with shapes {shapes}")
    name, (_, c, h, w) = inputs[0], shapes[0]

    layers = [l for k, l in net if k == "layer" and all(l is not i for i in input_layers)]
    if get(net, "layers"):
        sys.exit(f"make_train_net.py: {deploy}: V1 `layers` are not handled; upgrade the net first")
    last = layers[-1] if layers else []
    if unquote(one(last, "type", "")) != "Softmax" or len(get(last, "bottom")) != 1:
        sys.exit(f"make_train_net.py: {deploy}: the last layer is not a Softmax on one bottom")
    logits = unquote(one(last, "bottom"))
    producer = [l for l in layers if logits in (unquote(t) for t in get(l, "top"))]
    if not producer or unquote(one(producer[0], "type", "")) != "InnerProduct":
        sys.exit(f"make_train_net.py: {deploy}: the Softmax's bottom {logits} is not an inner product")

    counts = {"Convolution": [0, 0], "InnerProduct": [0, 0], "BatchNorm": [0, 0]}
    fillers = {"Convolution": ("convolution_param", [["type", '"msra"']]),
               "InnerProduct": ("inner_product_param", [["type", '"gaussian"'], ["std", "0.01"]])}
    for layer in layers:
        kind = unquote(one(layer, "type", ""))
        if kind in fillers:
            param_key, filler = fillers[kind]
            counts[kind][0] += 1
            param = one(layer, param_key)
            if param is None:
                param = []
                layer.append([param_key, param])
            if one(param, "weight_filler") is None:
                param.append(["weight_filler", [list(f) for f in filler]])
                counts[kind][1] += 1
        elif kind == "BatchNorm":
            counts[kind][0] += 1
            param = one(layer, "batch_norm_param")
            if param is not None and get(param, "use_global_stats"):
                param[:] = [f for f in param if f[0] != "use_global_stats"]
                counts[kind][1] += 1
    last[:] = [["name", '"loss"'], ["type", '"SoftmaxWithLoss"'], ["bottom", f'"{logits}"'],
               ["bottom", '"label"'], ["top", '"loss"']]

    dummy = [["name", f'"{name}"'], ["type", '"DummyData"'], ["top", f'"{name}"'], ["top", '"label"'],
             ["dummy_data_param", [
                 ["data_filler", [["type", '"constant"'], ["value", "0.5"]]],
                 ["data_filler", [["type", '"constant"'], ["value", "0"]]],
                 ["shape", [["dim", str(batch)], ["dim", str(c)], ["dim", str(h)], ["dim", str(w)]]],
                 ["shape", [["dim", str(batch)]]]]]]
    header = [[k, v] for k, v in net if k not in ("input", "input_dim", "input_shape", "layer", "layers")]
    result = header + [["layer", dummy]] + [["layer", l] for l in layers]
    text = (f"# Generated by scripts/bench/make_train_net.py from {deploy}: batch {batch}, DummyData "
            "input, fillers where missing, BatchNorm on batch statistics, SoftmaxWithLoss.\n"
            + "\n".join(dump(result)) + "\n")
    try:  # whole or not at all
        with atomic_file.replacing(out, "w") as f:
            f.write(text)
    except OSError as e:
        sys.exit(f"make_train_net.py: cannot write {out}: {e.strerror}")
    conv, ip, bn = counts["Convolution"], counts["InnerProduct"], counts["BatchNorm"]
    print(f"{out}: input {name} {batch}x{c}x{h}x{w}; {conv[0]} convolutions ({conv[1]} fillers added), "
          f"{ip[0]} inner products ({ip[1]} fillers added), {bn[0]} BatchNorm ({bn[1]} use_global_stats "
          f"dropped); loss on {logits}", file=sys.stderr)


if __name__ == "__main__":
    main()
