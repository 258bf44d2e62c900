#!/usr/bin/python3
"""hdf5_data_files.py - writes the HDF5 files of tests/layers/hdf5_data_test.cpp with h5py.

  hdf5_data_files.py FILE.h5 SPEC... [FILE.h5 SPEC...]...

An argument ending in ".h5" starts a new file; each SPEC after it adds one dataset to that file:

  NAME:TYPE:SHAPE:START[:STEP]   dataset /NAME of numpy type TYPE (f4, f8, i4), SHAPE given as
                                 dims joined by 'x' ("4x2x3x2", "4"), holding START + i * STEP
                                 (STEP defaults to 1) at flat index i, computed in float64 and then
                                 converted to TYPE.
"""
import sys

import h5py
import numpy as np


def add_dataset(h5file, spec):
    fields = spec.split(":")
    name, dtype, shape, start = fields[0], fields[1], fields[2], float(fields[3])
    step = float(fields[4]) if len(fields) > 4 else 1.0
    dims = tuple(int(d) for d in shape.split("x"))
    count = int(np.prod(dims, dtype=np.int64))
    values = start + np.arange(count, dtype=np.float64) * step
    h5file.create_dataset(name, data=values.astype("<" + dtype).reshape(dims))


def main(args):
    h5file = None
    for arg in args:
        if arg.endswith(".h5"):
            if h5file is not None:
                h5file.close()
            h5file = h5py.File(arg, "w")
        else:
            add_dataset(h5file, arg)
    if h5file is not None:
        h5file.close()


if __name__ == "__main__":
    main(sys.argv[1:])
