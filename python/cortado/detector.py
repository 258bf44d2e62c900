"""pycaffe-compatible ``caffe.Detector``: a Net that scores rectangular
windows of images, given either as explicit window lists or as Selective
Search proposals, with optional R-CNN style context around each window.

Method: R. Girshick, J. Donahue, T. Darrell, J. Malik, "Rich feature
hierarchies for accurate object detection and semantic segmentation",
http://arxiv.org/abs/1311.2524.  The proposal mode uses the
``selective_search_ijcv_with_python`` module
(https://github.com/sergeyk/selective_search_ijcv_with_python).
"""

import os

import numpy as np

import cortado
from cortado import io as _io
from cortado.classifier import _forward_images, _input_transformer


def _context_layout(window, image_hw, side, context_pad):
    """Geometry of a window taken with context for a square net input of
    ``side`` pixels whose outer ``context_pad`` pixels show the window's
    surroundings.

    The window (ymin, xmin, ymax, xmax) is grown about its center by
    side / (side - 2 * context_pad) and rounded, then clipped to the image.
    Returns (source, offset, size): ``source`` the clipped box as ints,
    image[source[0]:source[2], source[1]:source[3]] being the pixels used;
    ``offset`` the (y, x) input pixel where they go, non-zero where the
    grown box sticks out above or left of the image; ``size`` the (h, w)
    they are resized to, capped so that they end inside the input.
    """
    y0, x0, y1, x1 = np.asarray(window, dtype=float)
    start, stop = np.array([y0, x0]), np.array([y1, x1])
    growth = side / (side - 2.0 * context_pad)
    half = (stop - start + 1) / 2.
    middle = start + half
    start = np.round(middle - growth * half)
    stop = np.round(middle + growth * half)
    # input pixels per image pixel of the grown box, along y and x
    ratio = side / (stop - start + 1)
    offset = [int(round(max(0, -first) * r))
              for first, r in zip(start, ratio)]

    limit = np.asarray(image_hw[:2], dtype=float)
    start = np.clip(start, 0., limit)
    stop = np.clip(stop, 0., limit)
    kept = stop - start + 1
    assert kept[0] > 0 and kept[1] > 0
    size = [min(int(round(extent * r)), side - off)
            for extent, r, off in zip(kept, ratio, offset)]
    source = tuple(np.concatenate([start, stop]).astype(int))
    return source, offset, size


def _check_window(window, image_shape, filename):
    """A window (ymin, xmin, ymax, xmax) that covers part of its image."""
    height, width = image_shape[:2]
    if np.size(window) == 4:
        y0, x0, y1, x1 = np.ravel(window)
        if y0 < y1 and x0 < x1 and 0 < y1 and 0 < x1 and \
                y0 < height and x0 < width:
            return
    raise ValueError('detect_windows: window %r of %r is not (ymin, xmin, '
                     'ymax, xmax) with ymin < ymax and xmin < xmax inside its '
                     '%d x %d image' % (window, filename, height, width))


class Detector(cortado.Net):
    """A Net, loaded in the TEST phase, that classifies windows of images:
    each window is cut out (with context if ``context_pad`` is set), warped
    to the net's input size by ``self.transformer`` and scored.

    Parameters
    ----------
    model_file, pretrained_file : the deploy prototxt and the weights
    mean, input_scale, raw_scale, channel_swap : when given, passed to the
        transformer's set_mean, set_input_scale, set_raw_scale and
        set_channel_swap for the first input
    context_pad : width in pixels of the border of the (square) net input
        that shows the window's surroundings, as in R-CNN; None or 0 for
        the bare window
    """

    def __init__(self, model_file, pretrained_file, mean=None,
                 input_scale=None, raw_scale=None, channel_swap=None,
                 context_pad=None):
        cortado.Net.__init__(self, model_file, cortado.TEST,
                             weights=pretrained_file)
        self.transformer = _input_transformer(
            self, mean=mean, input_scale=input_scale, raw_scale=raw_scale,
            channel_swap=channel_swap)
        self.configure_crop(context_pad)

    def detect_windows(self, images_windows):
        """Score windows of image files.

        Parameters
        ----------
        images_windows : iterable of (image filename, windows) pairs, each
            window (ymin, xmin, ymax, xmax) in pixels; one-shot iterators
            such as zip objects are accepted

        Returns
        -------
        list of dicts, one per window in the order given, with keys
            'window' (the window as passed), 'prediction' (the net's first
            output for it) and 'filename'
        """
        jobs = []    # (filename, window) per window, in input order
        crops = []
        for filename, windows in images_windows:
            image = _io.load_image(filename).astype(np.float32)
            for window in windows:
                _check_window(window, image.shape, filename)
                jobs.append((filename, window))
                crops.append(self.crop(image, window))
        if not crops:
            raise IndexError('detect_windows: no windows were given')

        scores = _forward_images(self, crops)
        return [{'window': window, 'prediction': score, 'filename': filename}
                for (filename, window), score in zip(jobs, scores)]

    def detect_selective_search(self, image_fnames):
        """Score the Selective Search proposals of image files (computed by
        the selective_search_ijcv_with_python module, which runs MATLAB).

        Parameters
        ----------
        image_fnames : list of image file names

        Returns
        -------
        the list of dicts of detect_windows(), with absolute file names
        """
        try:
            import selective_search_ijcv_with_python as selective_search
        except ImportError as e:
            raise ImportError(
                'detect_selective_search needs the '
                'selective_search_ijcv_with_python module (and MATLAB); see '
                'https://github.com/sergeyk/selective_search_ijcv_with_python'
                ' -- or pass windows to detect_windows() instead') from e
        # MATLAB runs in another directory: hand it absolute paths.
        paths = [os.path.abspath(name) for name in image_fnames]
        proposals = selective_search.get_windows(
            paths, cmd='selective_search_rcnn')
        return self.detect_windows(list(zip(paths, proposals)))

    def crop(self, im, window):
        """The pixels of one window, ready for preprocessing.

        Parameters
        ----------
        im : (H x W x K) image ndarray
        window : (ymin, xmin, ymax, xmax)

        Returns
        -------
        Without ``context_pad``: im[ymin:ymax, xmin:xmax].  With it: an
        array of shape ``crop_dims`` filled with ``crop_mean``, into which
        the window and its surroundings are resized so that the window
        itself covers the input minus a ``context_pad`` border (see
        _context_layout); parts of the border beyond the image keep the
        mean.
        """
        if not self.context_pad:
            return im[window[0]:window[2], window[1]:window[3]]

        side = self.blobs[self.inputs[0]].data.shape[3]  # square input
        (top, left, bottom, right), (dy, dx), (h, w) = _context_layout(
            window, im.shape, side, self.context_pad)
        patch = _io.resize_image(im[top:bottom, left:right], (h, w))
        # mean-valued background; its dtype follows crop_mean (float64 for a
        # mean taken from the transformer, float32 for the zero default)
        canvas = self.crop_mean * np.ones(self.crop_dims, dtype=np.float32)
        canvas[dy:dy + h, dx:dx + w] = patch
        return canvas

    def configure_crop(self, context_pad):
        """Set ``crop_dims`` (the net input's shape in image axis order,
        (H, W, K)) and ``context_pad``; with context, also ``crop_mean``,
        the value filling the parts of a context crop outside the image:
        the transformer's mean taken back to raw image space (axes
        restored, channel swap undone, divided by the raw scale), or zeros
        when no mean is set.

        Parameters
        ----------
        context_pad : border width of context in input pixels (None or 0:
            none)
        """
        name = self.inputs[0]
        order = np.asarray(self.transformer.transpose[name])
        # Applying the transpose order to itself gives the image-order axes
        # for the (2, 0, 1) order set by the constructor (for any 3-cycle).
        to_image = order[order]
        self.crop_dims = np.array(self.blobs[name].data.shape[1:])[to_image]
        self.context_pad = context_pad
        if not self.context_pad:
            return

        mean = self.transformer.mean.get(name)
        if mean is None:
            self.crop_mean = np.zeros(self.crop_dims, dtype=np.float32)
            return
        if mean.ndim == 2:   # (H x W) mean of a one-channel input
            mean = mean[np.newaxis]
        raw_mean = mean.astype(float).transpose(to_image)
        swap = self.transformer.channel_swap.get(name)
        if swap is not None:
            raw_mean = raw_mean[:, :, np.argsort(swap)]
        raw_scale = self.transformer.raw_scale.get(name)
        if raw_scale is not None:
            raw_mean /= raw_scale
        self.crop_mean = raw_mean
