"""pycaffe-compatible ``caffe.io``: conversions between numpy arrays and the
BlobProto / BlobProtoVector / Datum messages, the ``Transformer`` input
preprocessor, and image loading, resizing and oversampling helpers.

The functions keep pycaffe's names, signatures, return dtypes and error
conditions so that scripts written for ``caffe.io`` run unchanged with
``import cortado as caffe``.
"""

import collections
import collections.abc
import errno
import numbers
import os

import numpy as np
import skimage
import skimage.io
from scipy.ndimage import zoom
from skimage.transform import resize

from cortado.proto import caffe_pb2
from cortado._names import require

__all__ = [
    'blobproto_to_array', 'array_to_blobproto',
    'arraylist_to_blobprotovector_str', 'arraylist_to_blobprotovecor_str',
    'blobprotovector_str_to_arraylist', 'array_to_datum', 'datum_to_array',
    'Transformer', 'load_image', 'resize_image', 'oversample',
]


# ===========================================================================
# Messages <-> arrays
# ===========================================================================

_LEGACY_BLOB_DIMS = ('num', 'channels', 'height', 'width')


def blobproto_to_array(blob, return_diff=False):
    """Return the values (or, with ``return_diff``, the gradients) held by a
    BlobProto as a float64 ndarray.

    A blob that sets any of the legacy num/channels/height/width fields is
    shaped (num, channels, height, width); otherwise ``blob.shape.dim`` gives
    the N-d shape.
    """
    if not isinstance(blob, caffe_pb2.BlobProto):
        raise TypeError('blobproto_to_array takes a BlobProto, not %s'
                        % type(blob).__name__)
    if any(blob.HasField(field) for field in _LEGACY_BLOB_DIMS):
        shape = tuple(getattr(blob, field) for field in _LEGACY_BLOB_DIMS)
    else:
        shape = tuple(blob.shape.dim)
    values = np.array(blob.diff if return_diff else blob.data)
    return _reshaped(values, shape, 'blobproto_to_array: the blob\'s %s'
                     % ('diff' if return_diff else 'data'))


def _reshaped(values, shape, what):
    """``values`` in ``shape``; a ValueError naming ``what`` when the
    numbers of values differ."""
    if values.size != int(np.prod(shape)):
        raise ValueError('%s holds %d values, but its shape %s needs %d'
                         % (what, values.size, shape, int(np.prod(shape))))
    return values.reshape(shape)


def array_to_blobproto(arr, diff=None):
    """Build a BlobProto from an N-d array (shape stored in ``shape.dim``).

    If ``diff`` is given it is stored as the gradient; it must have as many
    elements as ``arr`` (not checked, as in pycaffe).
    """
    blob = caffe_pb2.BlobProto()
    blob.shape.dim.extend(int(d) for d in arr.shape)
    blob.data.extend(np.asarray(arr).astype(float).flat)
    if diff is not None:
        blob.diff.extend(np.asarray(diff).astype(float).flat)
    return blob


def arraylist_to_blobprotovector_str(arraylist):
    """Serialize a list of arrays as a BlobProtoVector; returns bytes."""
    message = caffe_pb2.BlobProtoVector(
        blobs=[array_to_blobproto(a) for a in arraylist])
    return message.SerializeToString()


# pycaffe's spelling (with its typo); kept so that existing scripts work.
arraylist_to_blobprotovecor_str = arraylist_to_blobprotovector_str


def blobprotovector_str_to_arraylist(str):  # noqa: A002 -- pycaffe's name
    """Parse a serialized BlobProtoVector into a list of arrays."""
    message = caffe_pb2.BlobProtoVector.FromString(str)
    return list(map(blobproto_to_array, message.blobs))


def array_to_datum(arr, label=None):
    """Build a Datum from a 3-d (channels, height, width) array.

    uint8 arrays are stored as raw bytes in ``data``; any other dtype goes
    to ``float_data``.  ``label`` is set only when given.
    """
    if arr.ndim != 3:
        raise ValueError('Incorrect array shape: a Datum holds a 3-d '
                         '(channels, height, width) array, got {}.'
                         .format(arr.shape))
    channels, height, width = (int(d) for d in arr.shape)
    datum = caffe_pb2.Datum(channels=channels, height=height, width=width)
    if arr.dtype != np.uint8:
        datum.float_data.extend(arr.astype(float).flat)
    else:
        datum.data = np.ascontiguousarray(arr).tobytes()
    if label is not None:
        try:
            datum.label = int(label)
        except (TypeError, ValueError):
            raise TypeError('array_to_datum: label must be an integer, not %r'
                            % (label,))
    return datum


def datum_to_array(datum):
    """Return a Datum's payload as a (channels, height, width) array: uint8
    when it holds raw bytes, float64 otherwise.  The label is not returned
    (read ``datum.label``)."""
    shape = (datum.channels, datum.height, datum.width)
    if not datum.data:
        return _reshaped(np.array(datum.float_data, dtype=float), shape,
                         'datum_to_array: the Datum\'s float_data')
    raw = np.frombuffer(datum.data, dtype=np.uint8)
    return _reshaped(raw, shape, 'datum_to_array: the Datum\'s data').copy()


# ===========================================================================
# Transformer: images -> net input blobs and back
# ===========================================================================

# The settings recorded for one input blob; None where a step is not set.
_InputSettings = collections.namedtuple(
    '_InputSettings', 'transpose channel_swap raw_scale mean input_scale')


class Transformer:
    """Converts images in (H x W x K) layout, values typically in [0, 1],
    into the blob layout one of a Net's inputs expects, and back.

    Each step is configured per input name with a ``set_*`` method and
    recorded in the dict attribute of the same name (``transpose``,
    ``channel_swap``, ``raw_scale``, ``mean``, ``input_scale``).  Unset steps
    are skipped.

    Parameters
    ----------
    inputs : dict mapping input blob name -> blob shape (N, K, H, W)
    """

    def __init__(self, inputs):
        if not isinstance(inputs, collections.abc.Mapping):
            raise TypeError('Transformer takes {{input name: blob shape}}, '
                            'e.g. {{"data": net.blobs["data"].data.shape}}, '
                            'not {}'.format(type(inputs).__name__))
        self.inputs = inputs
        self.transpose = {}
        self.channel_swap = {}
        self.raw_scale = {}
        self.mean = {}
        self.input_scale = {}

    def _require_known(self, name):
        require('Transformer', 'input', name, self.inputs)

    def _settings(self, name):
        self._require_known(name)
        return _InputSettings(*(table.get(name) for table in (
            self.transpose, self.channel_swap, self.raw_scale, self.mean,
            self.input_scale)))

    def preprocess(self, in_, data):
        """Turn one image into a blob for input ``in_``.

        The steps, in order (those not configured are skipped):
        cast to float32 on a copy (``data`` itself is never modified);
        resize the spatial axes to the blob's (H, W) if they differ;
        permute the axes by the ``transpose`` order; reorder the channels
        (axis 0 after the permutation) by ``channel_swap``; multiply by
        ``raw_scale``; subtract ``mean``; multiply by ``input_scale``.

        Parameters
        ----------
        in_ : name of the input blob
        data : (H' x W' x K) ndarray

        Returns
        -------
        (K x H x W) float32 ndarray, one item of the input blob; with a
        transpose, channel swap or mean set, a ValueError when ``data`` does
        not give one (not an image, the wrong number of channels)
        """
        cfg = self._settings(in_)
        blob_hw = tuple(self.inputs[in_][2:])
        out = np.array(data, dtype=np.float32)
        # With a transpose, channel swap or mean the result is a (K x H x W)
        # item of the blob; without any, a cast (and resize) as in pycaffe.
        to_item = any(step is not None for step in
                      (cfg.transpose, cfg.channel_swap, cfg.mean))
        if to_item and out.ndim != 3:
            raise ValueError('preprocess: input {} takes (H x W x K) images, '
                             'not an array of shape {}'.format(in_, out.shape))
        if tuple(out.shape[:2]) != blob_hw:
            out = resize_image(out, blob_hw)
        if cfg.transpose is not None:
            out = out.transpose(cfg.transpose)
        if cfg.channel_swap is not None:
            if max(cfg.channel_swap) >= out.shape[0]:
                raise ValueError('preprocess: input {}: the image of shape {} '
                                 'has {} channels; channel swap {} reads '
                                 'more'.format(in_, np.shape(data),
                                               out.shape[0],
                                               tuple(cfg.channel_swap)))
            out = out[list(cfg.channel_swap), :, :]
        item_shape = tuple(self.inputs[in_][1:])
        if to_item and out.shape != item_shape:
            hint = '' if cfg.transpose is not None else (
                ' (set_transpose({!r}, (2, 0, 1)) for H x W x K images)'
                .format(in_))
            raise ValueError('preprocess: input {} takes items of shape {}; '
                             'the image of shape {} gives {}{}'.format(
                                 in_, item_shape, np.shape(data), out.shape,
                                 hint))
        # The arithmetic is done in place so that the blob stays float32
        # whatever the dtype of the configured values.
        if cfg.raw_scale is not None:
            out *= cfg.raw_scale
        if cfg.mean is not None:
            out -= cfg.mean
        if cfg.input_scale is not None:
            out *= cfg.input_scale
        return out

    def deprocess(self, in_, data):
        """Map a blob item (or a batch of one) for input ``in_`` back to an
        image: the steps of preprocess() undone in reverse order.  The resize
        is not undone, so the image has the blob's spatial size."""
        cfg = self._settings(in_)
        out = data.copy().squeeze()
        if cfg.input_scale is not None:
            out /= cfg.input_scale
        if cfg.mean is not None:
            out += cfg.mean
        if cfg.raw_scale is not None:
            out /= cfg.raw_scale
        if cfg.channel_swap is not None:
            out = out[np.argsort(cfg.channel_swap), :, :]
        if cfg.transpose is not None:
            out = out.transpose(np.argsort(cfg.transpose))
        return out

    def set_transpose(self, in_, order):
        """Record the axis permutation applied to images for input ``in_``;
        (2, 0, 1) turns (H x W x K) into (K x H x W).

        Parameters
        ----------
        in_ : name of the input blob
        order : permutation of the image's axes, one entry per axis of a
            blob item (the blob's rank minus one)
        """
        self._require_known(in_)
        n_axes = len(self.inputs[in_]) - 1
        if len(order) != n_axes:
            raise ValueError('Transpose order has {} entries but input {} '
                             'has {} axes per item.'.format(len(order), in_,
                                                            n_axes))
        if sorted(order) != list(range(n_axes)):
            raise ValueError('Transpose order {} for input {} is not an '
                             'order of the axes {}.'.format(
                                 tuple(order), in_, tuple(range(n_axes))))
        self.transpose[in_] = order

    def set_channel_swap(self, in_, order):
        """Record the channel order for input ``in_``: output channel i is
        taken from channel ``order[i]``, so (2, 1, 0) converts RGB to BGR.
        Channels are axis 0 of the image once the transpose is applied.

        Parameters
        ----------
        in_ : name of the input blob
        order : one source channel index per channel of the blob
        """
        self._require_known(in_)
        n_channels = self.inputs[in_][1]
        if len(order) != n_channels:
            raise ValueError('Channel swap has {} entries but input {} has '
                             '{} channels.'.format(len(order), in_,
                                                   n_channels))
        if not all(isinstance(c, numbers.Integral) and 0 <= c < n_channels
                   for c in order):
            raise ValueError('Channel swap {} for input {} names a channel '
                             'that is not one of 0..{}.'.format(
                                 tuple(order), in_, n_channels - 1))
        self.channel_swap[in_] = order

    def set_raw_scale(self, in_, scale):
        """Record the factor that multiplies the raw pixel values of input
        ``in_`` before the mean is subtracted.  Images loaded by load_image
        lie in [0, 1]; models trained on [0, 255] pixels (CaffeNet, for one)
        want 255 here.

        Parameters
        ----------
        in_ : name of the input blob
        scale : the factor
        """
        self._require_known(in_)
        self.raw_scale[in_] = _scale(scale, 'set_raw_scale', in_)

    def set_mean(self, in_, mean):
        """Record the mean subtracted from input ``in_`` (after the raw
        scaling, in the blob's channel order).

        Parameters
        ----------
        in_ : name of the input blob
        mean : ndarray, either one value per channel, shape (K,), stored as
            (K x 1 x 1); or a full mean of the blob item's shape (K x H x W),
            which for a one-channel input may also be given as (H x W).
        """
        self._require_known(in_)
        item_shape = tuple(self.inputs[in_][1:])
        mean = np.asarray(mean)
        if mean.ndim == 1:
            if mean.shape[0] != item_shape[0]:
                raise ValueError('Mean channels incompatible with input: {} '
                                 'values for {} channels.'.format(
                                     mean.shape[0], item_shape[0]))
            mean = mean.reshape(-1, 1, 1)
        else:
            as_3d = (1,) + mean.shape if mean.ndim == 2 else mean.shape
            if len(as_3d) != 3:
                raise ValueError('Mean shape invalid: {} (expected (K,), '
                                 '(K, H, W) or (H, W)).'.format(mean.shape))
            if tuple(as_3d) != item_shape:
                raise ValueError('Mean shape incompatible with input: {} '
                                 'for items of shape {}.'.format(mean.shape,
                                                                 item_shape))
        self.mean[in_] = mean

    def set_input_scale(self, in_, scale):
        """Record the factor that multiplies the blob of input ``in_`` as the
        last step, after the mean subtraction (set_raw_scale's factor applies
        before it).

        Parameters
        ----------
        in_ : name of the input blob
        scale : the factor
        """
        self._require_known(in_)
        self.input_scale[in_] = _scale(scale, 'set_input_scale', in_)


def _scale(scale, what, in_):
    """A scale factor: a number (or an array of numbers broadcast over the
    item)."""
    if not np.issubdtype(np.asarray(scale).dtype, np.number):
        raise TypeError('{}: the scale for input {} must be a number, not '
                        '{!r}'.format(what, in_, scale))
    return scale


# ===========================================================================
# Images: loading, resizing, cropping
# ===========================================================================

def load_image(filename, color=True):
    """Read an image file into a float32 array with values in [0, 1].

    Parameters
    ----------
    filename : string
    color : boolean
        True (default): the result has three RGB channels, a grayscale file
        being repeated into all three.  False: the file is read as
        intensity.

    Returns
    -------
    image : float32 ndarray, (H x W x 3) for color, (H x W x 1) for
        intensity.  An alpha channel is dropped.
    """
    if os.path.isdir(filename):
        raise IsADirectoryError(errno.EISDIR, 'load_image: a directory, not '
                                'an image file', filename)
    try:
        pixels = skimage.io.imread(filename, as_gray=not color)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as e:
        raise ValueError('load_image: {!r} is not an image file that can be '
                         'read ({})'.format(filename, e)) from None
    img = skimage.img_as_float(pixels).astype(np.float32)
    if img.ndim == 2:
        img = img[:, :, np.newaxis]
        return np.repeat(img, 3, axis=2) if color else img
    if img.shape[2] == 4:
        return img[:, :, :3]
    return img


def resize_image(im, new_dims, interp_order=1):
    """Resample an image to a new height and width, keeping its channels.

    Parameters
    ----------
    im : (H x W x K) ndarray
    new_dims : (height, width) of the result
    interp_order : spline order of the interpolation (1, the default, is
        bilinear)

    Returns
    -------
    float32 ndarray of shape (new_dims[0], new_dims[1], K)
    """
    if np.ndim(im) != 3:
        raise ValueError('resize_image: the image must be (H x W x K), not '
                         'an array of shape {}'.format(np.shape(im)))
    if len(new_dims) != 2 or min(new_dims) <= 0:
        raise ValueError('resize_image: new_dims must be (height, width), '
                         'both positive, not {}'.format(tuple(new_dims)))
    n_channels = im.shape[-1]
    if n_channels not in (1, 3):
        # skimage's resize is only used for 1 or 3 channels; other channel
        # counts go through scipy's zoom, which leaves the last axis alone.
        factors = (np.array(new_dims, dtype=float) /
                   np.array(im.shape[:2]))
        return zoom(im, tuple(factors) + (1,),
                    order=interp_order).astype(np.float32)
    low, high = im.min(), im.max()
    if not high > low:
        # A constant image (no range to normalise by) stays constant.
        return np.full((new_dims[0], new_dims[1], n_channels), low,
                       dtype=np.float32)
    # skimage's resize expects values in [0, 1]: map the image's range onto
    # it and back.
    span = high - low
    unit = resize((im - low) / span, new_dims, order=interp_order)
    return (unit * span + low).astype(np.float32)


def _centered_box(outer_dims, inner_dims):
    """(top, left, bottom, right) of an inner_dims (height, width) box
    centred in outer_dims, each coordinate truncated toward zero."""
    middle = np.asarray(outer_dims[:2], dtype=float) / 2.0
    half = np.asarray(inner_dims[:2], dtype=float) / 2.0
    top, left = (middle - half).astype(int)
    bottom, right = (middle + half).astype(int)
    return top, left, bottom, right


def oversample(images, crop_dims):
    """Cut ten crops from each image: the four corners and the center, then
    the same five flipped left to right.

    Parameters
    ----------
    images : sequence of (H x W x K) ndarrays, all of the same shape
    crop_dims : (height, width) of the crops

    Returns
    -------
    (10*N x h x w x K) float32 ndarray for N images; image n's crops are
        rows 10n..10n+9 in the order top-left, top-right, bottom-left,
        bottom-right, center, and then their mirrors in the same order.
    """
    if len(images) == 0:
        raise ValueError('oversample: no images given')
    shapes = {np.shape(image) for image in images}
    if len(shapes) > 1 or np.ndim(images[0]) != 3:
        raise ValueError('oversample: the images must be (H x W x K) arrays '
                         'of one shape, not of shapes {}'.format(
                             sorted(shapes)))
    height, width = images[0].shape[:2]
    n_channels = images[0].shape[-1]
    crop_h, crop_w = int(crop_dims[0]), int(crop_dims[1])
    if not (0 < crop_h <= height and 0 < crop_w <= width):
        raise ValueError('oversample: crops of {} x {} do not fit in images '
                         'of {} x {}'.format(crop_h, crop_w, height, width))
    bottom, right = height - crop_h, width - crop_w
    top_lefts = [(0, 0), (0, right), (bottom, 0), (bottom, right),
                 _centered_box((height, width), (crop_h, crop_w))[:2]]

    crops = np.empty((10 * len(images), crop_h, crop_w, n_channels),
                     dtype=np.float32)
    for n, image in enumerate(images):
        first = 10 * n
        for k, (y, x) in enumerate(top_lefts):
            piece = image[y:y + crop_h, x:x + crop_w, :]
            crops[first + k] = piece
            crops[first + 5 + k] = piece[:, ::-1, :]
    return crops
