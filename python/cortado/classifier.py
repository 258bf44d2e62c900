"""pycaffe-compatible ``caffe.Classifier``: a Net specialised for image
classification, with resizing, center cropping or 10-crop oversampling and
the ``io.Transformer`` preprocessing of its first input.
"""

import numpy as np

import cortado
from cortado import io as _io


def _input_transformer(net, mean=None, input_scale=None, raw_scale=None,
                       channel_swap=None):
    """An io.Transformer for ``net``'s first input, which takes (H x W x K)
    images: the transpose is (2, 0, 1) and each option that is not None is
    passed to its setter (set_mean, set_input_scale, set_raw_scale,
    set_channel_swap, in that order).  Shared by Classifier and Detector."""
    if not net.inputs:
        raise ValueError('{} takes a deploy net, whose first input (an '
                         'Input layer) receives the images; this net has no '
                         'input'.format(type(net).__name__))
    name = net.inputs[0]
    transformer = _io.Transformer({name: net.blobs[name].data.shape})
    transformer.set_transpose(name, (2, 0, 1))
    for setter, value in ((transformer.set_mean, mean),
                          (transformer.set_input_scale, input_scale),
                          (transformer.set_raw_scale, raw_scale),
                          (transformer.set_channel_swap, channel_swap)):
        if value is not None:
            setter(name, value)
    return transformer


def _check_images(images, what):
    """A non-empty sequence of (H x W x K) images with one K."""
    if len(images) == 0:
        raise ValueError('{}: no images given'.format(what))
    for n, image in enumerate(images):
        if (np.ndim(image) != 3 or
                np.shape(image)[2] != np.shape(images[0])[2]):
            raise ValueError('{}: image {} has shape {}; images are (H x W x '
                             'K) arrays with one K (load_image gives them)'
                             .format(what, n, np.shape(image)))


def _forward_images(net, images):
    """Preprocess each (H x W x K) image with ``net.transformer`` for the
    first input, run them through the net as one batch (forward_all splits
    it to the blob's batch size) and return the first output."""
    name = net.inputs[0]
    batch = np.stack([net.transformer.preprocess(name, image)
                      for image in images])
    return net.forward_all(**{name: batch})[net.outputs[0]]


class Classifier(cortado.Net):
    """A Net, loaded in the TEST phase, that predicts class probabilities
    for (H x W x K) images.

    Images are first resized to ``image_dims``; the net then sees crops of
    its own input size (``crop_dims``): the center crop, or the ten crops of
    io.oversample whose predictions are averaged.  Each crop is prepared by
    ``self.transformer``.

    Parameters
    ----------
    model_file, pretrained_file : the deploy prototxt and the weights
    image_dims : (height, width) the images are resized to before cropping;
        by default the net's input size, so that the crop is the whole image
    mean, input_scale, raw_scale, channel_swap : when given, passed to the
        transformer's set_mean, set_input_scale, set_raw_scale and
        set_channel_swap for the first input
    """

    def __init__(self, model_file, pretrained_file, image_dims=None,
                 mean=None, input_scale=None, raw_scale=None,
                 channel_swap=None):
        cortado.Net.__init__(self, model_file, cortado.TEST,
                             weights=pretrained_file)
        self.transformer = _input_transformer(
            self, mean=mean, input_scale=input_scale, raw_scale=raw_scale,
            channel_swap=channel_swap)
        # (height, width) of the net input; an empty or missing image_dims
        # means "resize straight to it"
        self.crop_dims = np.array(self.blobs[self.inputs[0]].data.shape[2:])
        use_input_size = image_dims is None or len(image_dims) == 0
        if not use_input_size and (len(image_dims) != 2 or
                                   min(image_dims) <= 0):
            raise ValueError('Classifier: image_dims must be (height, width), '
                             'both positive, not {}'.format(tuple(image_dims)))
        self.image_dims = self.crop_dims if use_input_size else image_dims

    def predict(self, inputs, oversample=True):
        """Class probabilities of a list of images.

        Parameters
        ----------
        inputs : sequence of (H x W x K) ndarrays
        oversample : boolean
            True (default): each image's prediction is the mean over its
            ten oversampled crops (corners, center and their mirrors).
            False: only the center crop is classified.

        Returns
        -------
        (N x C) ndarray: row n holds the probabilities of the C classes for
            image n.
        """
        _check_images(inputs, 'predict')
        height, width = self.image_dims[0], self.image_dims[1]
        scaled = np.zeros((len(inputs), height, width, inputs[0].shape[2]),
                          dtype=np.float32)
        for n, image in enumerate(inputs):
            scaled[n] = _io.resize_image(image, self.image_dims)

        if not oversample:
            top, left, bottom, right = _io._centered_box(self.image_dims,
                                                         self.crop_dims)
            centers = scaled[:, top:bottom, left:right, :]
            if centers.shape[1:3] != tuple(self.crop_dims):
                raise ValueError(
                    'center-crop prediction needs image_dims {} to be at '
                    'least the net input size {}'.format(
                        tuple(self.image_dims), tuple(self.crop_dims)))
            return _forward_images(self, centers)

        per_crop = _forward_images(self, _io.oversample(scaled,
                                                        self.crop_dims))
        return per_crop.reshape(len(scaled), 10, -1).mean(axis=1)
