"""Spatial coordinate mapping between net-spec tops (pycaffe's
``caffe.coord_map``).

Each spatial layer maps the coordinates of its input to those of its output
by an affine map per spatial axis, described as ``(axis, scale, shift)``:
``coord_out = scale * coord_in + shift``.  ``axis`` is the layer's channel
axis (the spatial axes come after it); ``None`` means the map does not depend
on the axis (pointwise layers: the identity ``(None, 1, 0)``).

* Convolution / Pooling / Im2col: ``(axis, 1/stride, (pad - (k-1)/2)/stride)``
  with the dilated kernel extent ``k = (kernel-1)*dilation + 1``;
* Deconvolution: ``(axis, stride, (k-1)/2 - pad)``;
* Crop with ``axis=a, offset=o``: ``(a-1, 1, -o)``;
* pointwise layers (ReLU, Eltwise, BatchNorm, ...): ``(None, 1, 0)``;
* anything else raises ``UndefinedMapException`` and stops the walk.

``coord_map_from_to(top_from, top_to)`` walks the net spec back from both tops
to a common ancestor, composing maps, and returns the map from ``top_from``'s
coordinates to ``top_to``'s; ``crop(top_from, top_to)`` uses it to spec a Crop
layer that aligns ``top_from`` with ``top_to`` (as FCNs do).  Kernel, stride,
pad and dilation may be scalars or per-axis lists; scales and shifts are numpy
arrays with one entry per spatial axis (or one for all).
"""

from __future__ import division

import numpy as np

from .net_spec import layers as L

__all__ = ['PASS_THROUGH_LAYERS', 'conv_params', 'crop_params', 'coord_map',
           'compose', 'inverse', 'coord_map_from_to', 'crop',
           'UndefinedMapException', 'AxisMismatchException']

PASS_THROUGH_LAYERS = ['AbsVal', 'BatchNorm', 'Bias', 'BNLL', 'Clip',
                       'Dropout', 'Eltwise', 'ELU', 'Log', 'LRN', 'Exp', 'MVN',
                       'Power', 'ReLU', 'PReLU', 'Scale', 'Sigmoid', 'Split',
                       'Swish', 'TanH', 'Threshold']

_LEGACY_2D_KEYS = {'pad_h', 'pad_w', 'kernel_h', 'kernel_w', 'stride_h',
                   'stride_w'}


class UndefinedMapException(Exception):
    """
    The layer has no spatial coordinate map (InnerProduct, global pooling,
    ...); a walk through the net stops at it.
    """


class AxisMismatchException(Exception):
    """
    Two coordinate maps that act on different axes cannot be composed.
    """


def _per_axis(value):
    """A scalar or a per-axis list as a one-dimensional array."""
    return np.array(value, ndmin=1)


def _settings(fn, *message_keys):
    """The dict holding a layer's settings: the first of ``message_keys``
    that the layer was given (``convolution_param=dict(...)``), otherwise its
    keyword arguments themselves."""
    for key in message_keys:
        if key in fn.params:
            return fn.params[key]
    return fn.params


def conv_params(fn):
    """
    The geometry of a Convolution, Deconvolution, Im2col or Pooling layer
    ``fn``: ``(axis, stride, extent, pad)``, where ``extent`` is the dilated
    kernel size ``(kernel_size - 1) * dilation + 1``; the last three are
    one-dimensional arrays.

    The values are taken from convolution_param or pooling_param when one of
    them is given, otherwise from the layer's keyword arguments, with
    Caffe's defaults (axis 1, stride 1, pad 0, dilation 1).  The 2-d
    ``*_h``/``*_w`` keys raise AssertionError; global pooling and a missing
    kernel_size raise UndefinedMapException.
    """
    settings = _settings(fn, 'convolution_param', 'pooling_param')
    legacy = [key for key in sorted(_LEGACY_2D_KEYS)
              if key in settings or key in fn.params]
    assert not legacy, \
        'legacy _h/_w params are not supported by the coordinate ' \
        'mapping ({})'.format(', '.join(legacy))
    if settings.get('global_pooling', False):
        raise UndefinedMapException('global pooling has no coordinate map')
    if 'kernel_size' not in settings:
        raise UndefinedMapException('{} layer without kernel_size'
                                    .format(fn.type_name))
    kernel = _per_axis(settings['kernel_size'])
    dilation = _per_axis(settings.get('dilation', 1))
    return (settings.get('axis', 1),
            _per_axis(settings.get('stride', 1)),
            (kernel - 1) * dilation + 1,
            _per_axis(settings.get('pad', 0)))


def crop_params(fn):
    """
    The ``(axis, offset)`` of the Crop layer ``fn``, defaulting as Caffe
    does: axis 2 (the spatial axes of N, C, H, W) and offset 0.
    """
    settings = _settings(fn, 'crop_param')
    return settings.get('axis', 2), _per_axis(settings.get('offset', 0))


def _strided_map(fn):
    # output i is centred on input stride * i - pad + (extent - 1) / 2
    axis, stride, extent, pad = conv_params(fn)
    return axis, 1 / stride, (pad - (extent - 1) / 2) / stride


def _upsampling_map(fn):
    axis, stride, extent, pad = conv_params(fn)
    return axis, stride, (extent - 1) / 2 - pad


def _crop_map(fn):
    axis, offset = crop_params(fn)
    # Crop names its first cropped axis; a map names the axis before the
    # spatial ones, as a convolution's channel axis.
    return axis - 1, 1, -offset


_MAPPED_TYPES = {
    'Convolution': _strided_map,
    'Pooling': _strided_map,
    'Im2col': _strided_map,
    'Deconvolution': _upsampling_map,
    'Crop': _crop_map,
}


def coord_map(fn):
    """
    The ``(axis, scale, shift)`` map of the layer (Function) ``fn`` from the
    coordinates of its input to those of its output: ``out = scale * in +
    shift``.  Pointwise layers (PASS_THROUGH_LAYERS) give the identity
    ``(None, 1, 0)``; other types without a spatial map raise
    UndefinedMapException.
    """
    make_map = _MAPPED_TYPES.get(fn.type_name)
    if make_map is not None:
        return make_map(fn)
    if fn.type_name in PASS_THROUGH_LAYERS:
        return None, 1, 0
    raise UndefinedMapException(
        'no coordinate map for {} layers'.format(fn.type_name))


def _common_axis(first, second):
    if first is None:
        return second
    if second is None or first == second:
        return first
    raise AxisMismatchException(
        'cannot compose coordinate maps on axis {} and axis {}'
        .format(first, second))


def compose(base_map, next_map):
    """
    The map that applies ``next_map`` and then ``base_map``: with scales
    a1, a2 and shifts b1, b2 (base, next) its scale is ``a1 * a2`` and its
    shift ``a1 * b2 + b1``.  An axis of None fits any axis; two different
    axes raise AxisMismatchException.
    """
    base_axis, base_scale, base_shift = base_map
    next_axis, next_scale, next_shift = next_map
    return (_common_axis(base_axis, next_axis),
            base_scale * next_scale,
            base_scale * next_shift + base_shift)


def inverse(coord_map):
    """
    The map that undoes ``coord_map`` (output back to input coordinates):
    scale ``1 / a`` and shift ``-b / a``.
    """
    axis, scale, shift = coord_map
    return axis, 1 / scale, -shift / scale


def _mapped_bottoms(top):
    """
    The inputs of ``top``'s layer that coordinates are mapped through: all
    of them, except that a Crop's second input only supplies the output
    shape and is left out.
    """
    inputs = top.fn.inputs
    return inputs[:1] if top.fn.type_name == 'Crop' else inputs


def _ancestor_maps(start):
    """
    Walk the spec back from the Top ``start`` through layers that have a
    coordinate map, yielding ``(top, map from top's coordinates to start's)``
    for each top taken from the frontier.  A top reached again by another
    path is yielded again, with its newer map; walking stops past layers
    without a map.
    """
    maps = {start: (None, 1, 0)}
    frontier = {start}
    while frontier:
        top = frontier.pop()
        yield top, maps[top]
        try:
            layer_map = coord_map(top.fn)
        except UndefinedMapException:
            continue
        for bottom in _mapped_bottoms(top):
            maps[bottom] = compose(maps[top], layer_map)
            frontier.add(bottom)


def coord_map_from_to(top_from, top_to):
    """
    The ``(axis, scale, shift)`` that takes coordinate ``x`` of
    ``top_from`` to coordinate ``scale * x + shift`` of ``top_to``.

    Both tops are traced back to a top they share, and the map of
    ``top_to`` from that ancestor is composed with the inverted map of
    ``top_from`` from it.  Raises RuntimeError when no shared top is
    reachable through layers with a coordinate map.
    """
    from_maps = dict(_ancestor_maps(top_from))
    for top, to_map in _ancestor_maps(top_to):
        if top in from_maps:
            return compose(to_map, inverse(from_maps[top]))
    raise RuntimeError('no coordinate map between the tops: they have no '
                       'common ancestor reachable through spatial layers')


def crop(top_from, top_to):
    """
    Spec a Crop layer that cuts ``top_from`` down to the region that lines
    up with ``top_to``; its axis and offsets come from coord_map_from_to.
    Returns the Crop's Top.  Raises AssertionError unless ``top_from`` maps
    onto ``top_to`` at scale 1 with whole, non-negative offsets.
    """
    axis, scale, shift = coord_map_from_to(top_from, top_to)
    scale = np.asarray(scale)
    offset = -np.asarray(shift)
    assert (scale == 1).all(), \
        'crop needs the tops at the same scale (scale = {})'.format(scale)
    assert (offset >= 0).all(), \
        'crop offset would be negative (offset = {})'.format(offset)
    assert (np.round(offset) == offset).all(), \
        'crop offset is not a whole number (offset = {})'.format(offset)
    crop_param = {'offset': [int(o) for o in np.ravel(offset)]}
    if axis is not None:
        crop_param['axis'] = axis + 1
    return L.Crop(top_from, top_to, crop_param=crop_param)
