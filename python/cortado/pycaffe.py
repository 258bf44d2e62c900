"""pycaffe.py: the Python half of cortado.Net, cortado.Layer and the solvers, pycaffe's interface over
the C++ bindings: blobs, params, layer_dict, top_names and bottom_names as OrderedDicts in creation
order (a missing name is a KeyError naming the closest); a layer's blobs as a sequence with add_blob;
forward and backward with start/end and named inputs; forward_all and forward_backward_all in
batches; set_input_arrays for MemoryData; the solver classes that fix the solver type. A pass checks
every argument before it writes any blob, so a refused call leaves the net as it was.
"""
from collections import OrderedDict
from collections.abc import Sequence
from itertools import zip_longest

import numpy as np

from ._cortado import CortadoError, Layer, Net, Solver
from ._names import closest, listing, require

# ---- structure -----------------------------------------------------------------------------------


def _cached(name, build):
    """A property computed once per Net object (the wrappers find their blob on every access)."""
    def get(self):
        cache = self.__dict__.setdefault('_pycaffe_cache', {})
        if name not in cache:
            cache[name] = build(self)
        return cache[name]
    return property(get)


class _ByName(OrderedDict):
    """A net's blobs, layers, ... by name, in creation order; a name that is not there is a KeyError
    naming the closest one: "<what>: no <kind> named 'x' (did you mean 'y'?); the net's <plural>: ..."."""

    def __init__(self, items=(), what='net', kind='entry', plural=None):
        super().__init__(items)
        self.what, self.kind, self.plural = what, kind, plural

    def __missing__(self, name):
        require(self.what, self.kind, name, self, self.plural)


class LayerBlobs(Sequence):
    """A layer's blobs (pycaffe's BlobVec), a sequence that follows the layer: indexing, slicing, len,
    iteration, and in a Python layer's setup add_blob(*shape), which appends a blob of that shape
    (self.blobs.add_blob(2, 3))."""

    def __init__(self, layer):
        self._layer = layer

    def __len__(self):
        return len(self._layer._blobs)

    def __getitem__(self, index):
        blobs = self._layer._blobs
        try:
            return blobs[index]
        except IndexError:
            raise IndexError('layer %r has %d blobs, not a blob %r' % (self._layer.name, len(blobs), index)) from None

    def __repr__(self):
        return repr(list(self))

    def add_blob(self, *shape):
        self._layer.add_blob(*shape)


def _blobs(self):
    return _ByName(zip(self._blob_names, self._blobs), 'net.blobs', 'blob')


def _blob_loss_weights(self):
    return _ByName(zip(self._blob_names, self._blob_loss_weights), 'net.blob_loss_weights', 'blob')


def _layer_dict(self):
    return _ByName(zip(self._layer_names, self.layers), 'net.layer_dict', 'layer')


def _params(self):
    return _ByName(((name, layer.blobs) for name, layer in zip(self._layer_names, self.layers)
                    if len(layer.blobs) > 0), 'net.params', 'layer', 'layers with parameters')


def _inputs(self):
    names = list(self._blob_names)
    return [names[i] for i in self._inputs]


def _outputs(self):
    names = list(self._blob_names)
    return [names[i] for i in self._outputs]


def _top_names(self):
    names = list(self._blob_names)
    return _ByName(((layer, [names[i] for i in self._top_ids(k)]) for k, layer in enumerate(self._layer_names)),
                   'net.top_names', 'layer')


def _bottom_names(self):
    names = list(self._blob_names)
    return _ByName(((layer, [names[i] for i in self._bottom_ids(k)]) for k, layer in enumerate(self._layer_names)),
                   'net.bottom_names', 'layer')


# ---- the checks of a pass's arguments: everything is checked before any blob is written -------------


def _blob_list(self, names, what):
    """`names` (None, one blob name or a list of them) as a list of the net's blob names."""
    if names is None:
        return []
    names = [names] if isinstance(names, str) else list(names)
    for name in names:
        require(what, 'blob', name, self.blobs)
    return names


def _pass_range(self, start, end, what, forward):
    """The layer indices (start, end) of a pass: forward runs start <= end, backward start >= end."""
    layers = list(self._layer_names)
    first, last = (0, len(layers) - 1) if forward else (len(layers) - 1, 0)
    if start is not None:
        first = layers.index(require(what + ': start', 'layer', start, layers))
    if end is not None:
        last = layers.index(require(what + ': end', 'layer', end, layers))
    if (first > last) if forward else (first < last):
        raise ValueError('%s: start layer %r comes %s end layer %r in the net'
                         % (what, layers[first], 'after' if forward else 'before', layers[last]))
    return first, last


def _refuse_unknown(given, known, what, known_text):
    unknown = [name for name in given if name not in known]
    if unknown:
        raise TypeError('%s: unknown keyword argument%s %s%s; %s' % (
            what, 's' if len(unknown) > 1 else '', ', '.join(map(repr, unknown)), closest(unknown, known), known_text))


def _refuse_missing(given, expected, what, kind):
    missing = [name for name in expected if name not in given]
    if missing:
        raise TypeError('%s: missing %s%s %s: give every %s of the net (%s), or none' % (
            what, kind, 's' if len(missing) > 1 else '', ', '.join(map(repr, missing)), kind, listing(expected)))


def _check_keywords(given, expected, what, kind):
    """The keyword arguments of a pass name every one of `expected` (the net's inputs or outputs)."""
    _refuse_unknown(given, expected, what, "the net's %ss: %s" % (kind, listing(expected)))
    _refuse_missing(given, expected, what, kind)


def _float_array(values, what, kind, name):
    try:
        return np.asarray(values, dtype=np.float32)
    except (TypeError, ValueError):
        raise TypeError('%s: %s %r must be an array of numbers, not %s' % (what, kind, name, type(values).__name__))


def _same_layout(shape, other):
    """Whether arrays of the two shapes hold their values in the same order: the same shape but for
    axes of size 1 ((N,) and (N, 1, 1, 1); not (N, H, W, C) and (N, C, H, W))."""
    return tuple(d for d in shape if d != 1) == tuple(d for d in other if d != 1)


def _as_blob_shape(name, values, shape, what, kind):
    """`values` for blob `name` as a float32 array of `shape`: that shape, or the same batch and
    layout with axes of size 1 added or left out (labels (N,) for a blob (N, 1), say)."""
    array = _float_array(values, what, kind, name)
    shape = tuple(shape)
    same_items = array.ndim > 0 and len(shape) > 0 and array.shape[0] == shape[0] and _same_layout(array.shape, shape)
    if array.shape != shape and not same_items:
        hint = ''
        if kind == 'input' and array.ndim == len(shape) and array.shape[1:] == shape[1:]:
            hint = '; for another batch size reshape it first: net.blobs[%r].reshape%s' % (name, array.shape)
        raise ValueError('%s: %s %r has shape %s, not %s%s' % (what, kind, name, shape, array.shape, hint))
    return array.reshape(shape)


def _checked_arrays(self, given, expected, what, kind):
    """{name: float32 array of its blob's shape} for the keyword arguments of a pass."""
    _check_keywords(given, expected, what, kind)
    return {name: _as_blob_shape(name, values, self.blobs[name].shape, what, kind) for name, values in given.items()}


def _checked_batches(self, given, what):
    """The keyword arguments of forward_all / forward_backward_all as float32 arrays of one length,
    each row as many values as an item of its blob."""
    arrays = {}
    for name, values in given.items():
        kind = 'input' if name in self.inputs else 'output'
        array = _float_array(values, what, kind, name)
        item = tuple(self.blobs[name].shape[1:])
        if array.ndim == 0 or not _same_layout(array.shape[1:], item):
            raise ValueError('%s: %s %r takes rows of shape %s, not an array of shape %s'
                             % (what, kind, name, item, array.shape))
        arrays[name] = array
    lengths = {name: len(array) for name, array in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError('%s: the arrays differ in length (%s); each holds one item per row'
                         % (what, ', '.join('%s: %d' % item for item in lengths.items())))
    return arrays


# ---- passes --------------------------------------------------------------------------------------


def _forward(self, blobs=None, start=None, end=None, **kwargs):
    """Runs the forward pass from layer `start` to layer `end` (names; default: the whole net), after
    copying the keyword arguments into the input blobs of those names (every input, or none). Returns
    {blob name: data} for the net's outputs (or `end`'s tops) and the blobs listed in `blobs`. A wrong
    argument raises before any blob is written."""
    blobs = _blob_list(self, blobs, 'forward: blobs')
    first, last = _pass_range(self, start, end, 'forward', forward=True)
    outputs = set((self.top_names[end] if end is not None else self.outputs) + blobs)
    arrays = _checked_arrays(self, kwargs, self.inputs, 'forward', 'input') if kwargs else {}
    for name, values in arrays.items():
        self.blobs[name].data[...] = values
    self._forward(first, last)
    return {name: self.blobs[name].data for name in outputs}


def _backward(self, diffs=None, start=None, end=None, **kwargs):
    """Runs the backward pass from layer `start` down to layer `end` (names; default: the whole net),
    after copying the keyword arguments into the diffs of the output blobs of those names (every
    output, or none). Returns {blob name: diff} for the net's inputs (or `end`'s bottoms) and the blobs
    listed in `diffs`. A wrong argument raises before any blob is written."""
    diffs = _blob_list(self, diffs, 'backward: diffs')
    first, last = _pass_range(self, start, end, 'backward', forward=False)
    outputs = set((self.bottom_names[end] if end is not None else self.inputs) + diffs)
    arrays = _checked_arrays(self, kwargs, self.outputs, 'backward', 'output') if kwargs else {}
    for name, values in arrays.items():
        self.blobs[name].diff[...] = values
    self._backward(first, last)
    return {name: self.blobs[name].diff for name in outputs}


def _forward_all(self, blobs=None, **kwargs):
    """Forward over inputs of any length (every input of the net, as keyword arguments of one
    length), in batches of the net's batch size. Returns {blob: data} for the outputs and `blobs`, as
    many rows as the inputs (padding of the last batch removed)."""
    blobs = _blob_list(self, blobs, 'forward_all: blobs')
    if not kwargs:
        raise TypeError('forward_all: give the net\'s inputs as keyword arguments (%s), one item per row'
                        % listing(self.inputs))
    _check_keywords(kwargs, self.inputs, 'forward_all', 'input')
    kwargs = _checked_batches(self, kwargs, 'forward_all')
    all_outputs = {name: [] for name in set(self.outputs + blobs)}
    for batch in self._batch(kwargs):
        outputs = self.forward(blobs=blobs, **batch)
        for name, values in outputs.items():
            all_outputs[name].extend(values.copy())
    return _trim(self, all_outputs, kwargs)


def _forward_backward_all(self, blobs=None, diffs=None, **kwargs):
    """forward_all and backward in batches: keyword arguments name inputs (forward; every input or
    none) or outputs (their diffs, backward; every output or none), all of one length. Returns
    ({blob: data}, {blob: diff})."""
    blobs = _blob_list(self, blobs, 'forward_backward_all: blobs')
    diffs = _blob_list(self, diffs, 'forward_backward_all: diffs')
    what = 'forward_backward_all'
    if not kwargs:
        raise TypeError('%s: give the net\'s inputs (%s) and/or its outputs\' diffs (%s) as keyword arguments'
                        % (what, listing(self.inputs), listing(self.outputs)))
    _refuse_unknown(kwargs, self.inputs + self.outputs, what,
                    "the net's inputs: %s; its outputs: %s" % (listing(self.inputs), listing(self.outputs)))
    inputs = [name for name in kwargs if name in self.inputs]
    top_diffs = [name for name in kwargs if name in self.outputs and name not in inputs]
    for given, expected, kind in ((inputs, self.inputs, 'input'), (top_diffs, self.outputs, 'output')):
        if given:
            _refuse_missing(given, expected, what, kind)
    kwargs = _checked_batches(self, kwargs, what)
    all_outputs = {name: [] for name in set(self.outputs + blobs)}
    all_diffs = {name: [] for name in set(self.inputs + diffs)}
    forward_batches = self._batch({k: kwargs[k] for k in inputs})
    backward_batches = self._batch({k: kwargs[k] for k in top_diffs})
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
    multiple of its batch size. The arrays are kept with the net, which reads them in place; arrays
    refused leave the net reading the ones it had."""
    layer_types = [layer.type for layer in self.layers]
    if 'MemoryData' not in layer_types:
        raise CortadoError('set_input_arrays: the net has no MemoryData layer (its layer types: %s)'
                           % listing(layer_types))
    data = np.ascontiguousarray(data, dtype=np.float32)
    labels = np.ascontiguousarray(labels, dtype=np.float32)
    if labels.ndim == 1:
        labels = labels[:, np.newaxis, np.newaxis, np.newaxis]
    result = self._set_input_arrays(data, labels, layer_types.index('MemoryData'))
    self._input_arrays = (data, labels)  # the layer reads them until the next call
    return result


def _reset(self):
    """Calls reset() on every Python layer that has one (a data layer starting its data over)."""
    for layer in self.layers:
        if layer.type == 'Python' and callable(getattr(layer, 'reset', None)):
            layer.reset()


Layer.blobs = property(LayerBlobs, doc=LayerBlobs.__doc__)
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
