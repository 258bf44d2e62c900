"""pycaffe.py: the Python half of cortado.Net and the solvers, pycaffe's interface over the C++
bindings: blobs, params, layer_dict, top_names and bottom_names as OrderedDicts in creation order;
forward and backward with start/end and named inputs; forward_all and forward_backward_all in
batches; set_input_arrays for MemoryData; the solver classes that fix the solver type.
"""
from collections import OrderedDict
from itertools import zip_longest

import numpy as np

from ._cortado import Net, Solver

# ---- structure -----------------------------------------------------------------------------------


def _cached(name, build):
    """A property computed once per Net object (the wrappers find their blob on every access)."""
    def get(self):
        cache = self.__dict__.setdefault('_pycaffe_cache', {})
        if name not in cache:
            cache[name] = build(self)
        return cache[name]
    return property(get)


def _blobs(self):
    return OrderedDict(zip(self._blob_names, self._blobs))


def _blob_loss_weights(self):
    return OrderedDict(zip(self._blob_names, self._blob_loss_weights))


def _layer_dict(self):
    return OrderedDict(zip(self._layer_names, self.layers))


def _params(self):
    return OrderedDict((name, layer.blobs) for name, layer in zip(self._layer_names, self.layers)
                       if len(layer.blobs) > 0)


def _inputs(self):
    names = list(self._blob_names)
    return [names[i] for i in self._inputs]


def _outputs(self):
    names = list(self._blob_names)
    return [names[i] for i in self._outputs]


def _top_names(self):
    names = list(self._blob_names)
    return OrderedDict((layer, [names[i] for i in self._top_ids(k)])
                       for k, layer in enumerate(self._layer_names))


def _bottom_names(self):
    names = list(self._blob_names)
    return OrderedDict((layer, [names[i] for i in self._bottom_ids(k)])
                       for k, layer in enumerate(self._layer_names))


# ---- passes --------------------------------------------------------------------------------------


def _forward(self, blobs=None, start=None, end=None, **kwargs):
    """Runs the forward pass from layer `start` to layer `end` (names; default: the whole net), after
    copying the keyword arguments into the input blobs of those names. Returns {blob name: data} for
    the net's outputs (or `end`'s tops) and the blobs listed in `blobs`."""
    blobs = list(blobs or [])
    layer_names = list(self._layer_names)
    start_index = layer_names.index(start) if start is not None else 0
    if end is not None:
        end_index = layer_names.index(end)
        outputs = set(self.top_names[end] + blobs)
    else:
        end_index = len(layer_names) - 1
        outputs = set(self.outputs + blobs)
    if kwargs:
        if set(kwargs.keys()) != set(self.inputs):
            raise Exception('Input blob arguments do not match net inputs.')
        for name, values in kwargs.items():
            if values.shape[0] != self.blobs[name].shape[0]:
                raise Exception('Input is not batch sized')
            self.blobs[name].data[...] = values
    self._forward(start_index, end_index)
    return {name: self.blobs[name].data for name in outputs}


def _backward(self, diffs=None, start=None, end=None, **kwargs):
    """Runs the backward pass from layer `start` down to layer `end` (names; default: the whole net),
    after copying the keyword arguments into the diffs of the output blobs of those names. Returns
    {blob name: diff} for the net's inputs (or `end`'s bottoms) and the blobs listed in `diffs`."""
    diffs = list(diffs or [])
    layer_names = list(self._layer_names)
    start_index = layer_names.index(start) if start is not None else len(layer_names) - 1
    if end is not None:
        end_index = layer_names.index(end)
        outputs = set(self.bottom_names[end] + diffs)
    else:
        end_index = 0
        outputs = set(self.inputs + diffs)
    if kwargs:
        if set(kwargs.keys()) != set(self.outputs):
            raise Exception('Top diff arguments do not match net outputs.')
        for name, values in kwargs.items():
            if values.shape[0] != self.blobs[name].shape[0]:
                raise Exception('Diff is not batch sized')
            self.blobs[name].diff[...] = values
    self._backward(start_index, end_index)
    return {name: self.blobs[name].diff for name in outputs}


def _forward_all(self, blobs=None, **kwargs):
    """Forward over inputs of any length, in batches of the net's batch size. Returns {blob: data} for
    the outputs and `blobs`, as many rows as the inputs (padding of the last batch removed)."""
    all_outputs = {name: [] for name in set(self.outputs + list(blobs or []))}
    for batch in self._batch(kwargs):
        outputs = self.forward(blobs=blobs, **batch)
        for name, values in outputs.items():
            all_outputs[name].extend(values.copy())
    return _trim(self, all_outputs, kwargs)


def _forward_backward_all(self, blobs=None, diffs=None, **kwargs):
    """forward_all and backward in batches: keyword arguments name inputs (forward) or outputs (their
    diffs, backward). Returns ({blob: data}, {blob: diff})."""
    all_outputs = {name: [] for name in set(self.outputs + list(blobs or []))}
    all_diffs = {name: [] for name in set(self.inputs + list(diffs or []))}
    forward_batches = self._batch({k: v for k, v in kwargs.items() if k in self.inputs})
    backward_batches = self._batch({k: v for k, v in kwargs.items() if k in self.outputs})
    for forward_batch, backward_batch in zip_longest(forward_batches, backward_batches, fillvalue={}):
        outputs = self.forward(blobs=blobs, **forward_batch)
        gradients = self.backward(diffs=diffs, **backward_batch)
        for name, values in outputs.items():
            all_outputs[name].extend(values.copy())
        for name, values in gradients.items():
            all_diffs[name].extend(values.copy())
    return _trim(self, all_outputs, kwargs), _trim(self, all_diffs, kwargs)


def _trim(self, collected, kwargs):
    result = {name: np.asarray(values) for name, values in collected.items()}
    if kwargs and result:
        total = len(next(iter(kwargs.values())))
        pad = len(next(iter(result.values()))) - total
        if pad > 0:
            result = {name: values[:-pad] for name, values in result.items()}
    return result


def _batch(self, blobs):
    """Splits {name: array} into net-batch-sized pieces; the last is padded with zeros."""
    if not blobs:
        return
    total = len(next(iter(blobs.values())))
    batch_size = next(iter(self.blobs.values())).shape[0]
    remainder = total % batch_size
    full = total - remainder
    for start in range(0, full, batch_size):
        yield {name: blobs[name][start:start + batch_size] for name in blobs}
    if remainder > 0:
        padded = {}
        for name in blobs:
            padding = np.zeros((batch_size - remainder,) + blobs[name].shape[1:])
            padded[name] = np.concatenate([blobs[name][-remainder:], padding])
        yield padded


def _set_input_arrays(self, data, labels):
    """Feeds a MemoryData layer (the net's first) `data` (N x C x H x W) and `labels` (N); N must be a
    multiple of its batch size. The arrays are kept with the net, which reads them in place."""
    layer_types = [layer.type for layer in self.layers]
    if 'MemoryData' not in layer_types:
        raise Exception('set_input_arrays: the net has no MemoryData layer')
    data = np.ascontiguousarray(data, dtype=np.float32)
    labels = np.ascontiguousarray(labels, dtype=np.float32)
    if labels.ndim == 1:
        labels = labels[:, np.newaxis, np.newaxis, np.newaxis]
    self._input_arrays = (data, labels)  # the layer reads them until the next call
    return self._set_input_arrays(data, labels, layer_types.index('MemoryData'))


def _reset(self):
    """Calls reset() on every Python layer that has one (a data layer starting its data over)."""
    for layer in self.layers:
        if layer.type == 'Python' and callable(getattr(layer, 'reset', None)):
            layer.reset()


Net.blobs = _cached('blobs', _blobs)
Net.blob_loss_weights = _cached('blob_loss_weights', _blob_loss_weights)
Net.layer_dict = property(_layer_dict)
Net.params = property(_params)
Net.inputs = _cached('inputs', _inputs)
Net.outputs = _cached('outputs', _outputs)
Net.top_names = _cached('top_names', _top_names)
Net.bottom_names = _cached('bottom_names', _bottom_names)
Net.forward = _forward
Net.backward = _backward
Net.forward_all = _forward_all
Net.forward_backward_all = _forward_backward_all
Net.set_input_arrays = _set_input_arrays
Net._batch = _batch
Net.reset = _reset


# ---- solvers -------------------------------------------------------------------------------------


def _solver_class(type_name):
    class TypedSolver(Solver):
        def __init__(self, filename):
            Solver.__init__(self, filename, type_name)
    TypedSolver.__name__ = TypedSolver.__qualname__ = type_name + 'Solver'
    TypedSolver.__doc__ = 'Trains with the %s update, whatever type the solver file names.' % type_name
    return TypedSolver


SGDSolver = _solver_class('SGD')
NesterovSolver = _solver_class('Nesterov')
AdaGradSolver = _solver_class('AdaGrad')
RMSPropSolver = _solver_class('RMSProp')
AdaDeltaSolver = _solver_class('AdaDelta')
AdamSolver = _solver_class('Adam')


def get_solver(filename):
    """The solver its file describes, of the type the file names (SGD when none)."""
    return Solver(filename)
