#!/usr/bin/python3
"""hdf5_caffe_layout.py - an independent HDF5 writer and reader (h5py) for tests/io/hdf5_test.cpp.

  write-caffe DIR   writes DIR/caffe.caffemodel.h5 and DIR/caffe.solverstate.h5 the way Caffe's
                    Net::ToHDF5 (snapshot_diff on) and SGDSolver::SnapshotSolverStateToHDF5 do: float32
                    datasets, int32 scalars as one-element arrays, learned_net as a scalar fixed-length
                    NUL-terminated string, groups without creation order. Also DIR/h5py.solverstate.h5,
                    written the way h5py writes by default (variable-length string, int64 scalars).
  dump FILE OUT     writes one line per group and dataset of FILE to OUT, sorted; float values as
                    their IEEE bit patterns in hex, so that the test can compare them exactly.
"""
import sys

import h5py
import numpy as np


def value(layer, blob, i):
    """The value formula shared with ExpectedValue() in hdf5_test.cpp (double, then rounded to float32)."""
    return np.float32(((i * 37) % 101) / 7.0 - 5.0 + layer + 0.125 * blob)


def values(layer, blob, shape):
    count = int(np.prod(shape, dtype=np.int64))
    return np.array([value(layer, blob, i) for i in range(count)], dtype="<f4").reshape(shape)


def make_string(group, name, text):
    """H5LTmake_dataset_string: scalar dataspace, C string type of strlen + 1 bytes, NUL-terminated."""
    raw = text.encode("ascii")
    string_type = h5py.h5t.C_S1.copy()
    string_type.set_size(len(raw) + 1)
    string_type.set_strpad(h5py.h5t.STR_NULLTERM)
    dataset = h5py.h5d.create(group.id, name.encode(), string_type, h5py.h5s.create(h5py.h5s.SCALAR))
    dataset.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array(raw + b"\0", dtype="S%d" % (len(raw) + 1)),
                  mtype=string_type)


# Layers as Caffe's ToHDF5 writes them, in net order: (name, layer number for values, blob shapes,
# blob indices present under /data). conv1_p shares conv1's weights, so Caffe leaves out its /data/0.
CAFFE_LAYERS = [
    ("conv1", 0, [(2, 1, 3, 3), (2,)], [0, 1]),
    ("relu1", 1, [], []),
    ("ip2", 2, [(4, 18), (4,)], [0, 1]),
    ("conv1_p", 3, [(2, 1, 3, 3), (2,)], [1]),
]
HISTORY_SHAPES = [(i + 1,) if i % 2 else (2, i + 1) for i in range(11)]


def write_caffe(directory):
    with h5py.File(directory + "/caffe.caffemodel.h5", "w", track_order=False) as f:
        data, diff = f.create_group("data"), f.create_group("diff")
        for name, layer, shapes, present in CAFFE_LAYERS:
            data_layer, diff_layer = data.create_group(name), diff.create_group(name)
            for j, shape in enumerate(shapes):
                if j in present:
                    data_layer.create_dataset(str(j), data=values(layer, j, shape))
                diff_layer.create_dataset(str(j), data=values(layer + 10, j, shape))
    with h5py.File(directory + "/caffe.solverstate.h5", "w") as f:
        f.create_dataset("iter", data=np.array([1234], dtype="<i4"))
        make_string(f, "learned_net", "snapshots/caffe_iter_1234.caffemodel.h5")
        f.create_dataset("current_step", data=np.array([2], dtype="<i4"))
        history = f.create_group("history")
        for i, shape in enumerate(HISTORY_SHAPES):
            history.create_dataset(str(i), data=values(100, i, shape))
    with h5py.File(directory + "/h5py.solverstate.h5", "w") as f:
        f["iter"] = np.int64(77)
        f["learned_net"] = "weights.caffemodel.h5"
        f["current_step"] = np.int64(1)
        f.create_group("history").create_dataset("0", data=values(5, 0, (3,)).astype("<f8"))


def describe(name, item):
    if isinstance(item, h5py.Group):
        flags = item.id.get_create_plist().get_link_creation_order()
        order = []
        if flags & h5py.h5p.CRT_ORDER_INDEXED:
            item.id.links.iterate(lambda n: order.append(n.decode()), idx_type=h5py.h5.INDEX_CRT_ORDER)
        else:
            order = sorted(item.keys())
        return "group /%s order=%s children=%s" % (name, "created" if flags else "name", ",".join(order))
    dtype = item.id.get_type()
    if isinstance(dtype, h5py.h5t.TypeStringID):
        pad = {h5py.h5t.STR_NULLTERM: "nullterm", h5py.h5t.STR_NULLPAD: "nullpad"}.get(dtype.get_strpad(), "other")
        kind = "vlen" if dtype.is_variable_str() else "fixed size=%d" % dtype.get_size()
        return "dataset /%s string %s pad=%s shape=%s value=%r" % (name, kind, pad, item.shape, item[()])
    array = item[()]
    if array.dtype.kind == "f":
        shown = ",".join("%08x" % v for v in np.asarray(array, dtype="<f4").reshape(-1).view("<u4"))
    else:
        shown = ",".join(str(int(v)) for v in np.asarray(array).reshape(-1))
    return "dataset /%s %s shape=%s values=%s" % (name, array.dtype.str, item.shape, shown)


def dump(path, out):
    lines = []
    with h5py.File(path, "r") as f:
        lines.append(describe("", f))
        f.visititems(lambda name, item: lines.append(describe(name, item)))
    with open(out, "w") as handle:
        handle.write("\n".join(sorted(lines)) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "write-caffe":
        write_caffe(sys.argv[2])
    elif sys.argv[1] == "dump":
        dump(sys.argv[2], sys.argv[3])
    else:
        sys.exit("unknown command " + sys.argv[1])
