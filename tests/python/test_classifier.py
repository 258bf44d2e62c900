"""Tests for cortado.Classifier and cortado.Detector (pycaffe's
caffe.Classifier / caffe.Detector) on a tiny deploy net built in tmp_path.

Predictions are compared with a reference computed crop by crop: the crops
cut with numpy slicing, preprocessed by an io.Transformer configured the
same way, and run one at a time through a separate batch-1 Net.  Skipped
until the binding (cortado.Net) is built.  Run with
    PYTHONPATH=<dir holding the cortado package> python3 -m pytest tests/python/test_classifier.py
"""

import numpy as np
import pytest
import skimage.io

cortado = pytest.importorskip('cortado')
if not hasattr(cortado, 'Net'):
    pytest.skip('cortado.Net is not available (binding not built)',
                allow_module_level=True)

from cortado import io as caffe_io  # noqa: E402
from cortado.classifier import Classifier  # noqa: E402
from cortado.detector import Detector  # noqa: E402

N_CLASSES = 5
SIDE = 8  # the net takes 1 x 3 x 8 x 8

DEPLOY = """
name: "tiny"
layer {
  name: "data" type: "Input" top: "data"
  input_param { shape { dim: 1 dim: 3 dim: %(side)d dim: %(side)d } }
}
layer {
  name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param {
    num_output: 4 kernel_size: 3
    weight_filler { type: "gaussian" std: 0.5 }
    bias_filler { type: "constant" value: 0.1 }
  }
}
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer {
  name: "fc" type: "InnerProduct" bottom: "conv" top: "fc"
  inner_product_param {
    num_output: %(classes)d
    weight_filler { type: "gaussian" std: 0.5 }
    bias_filler { type: "constant" value: 0 }
  }
}
layer { name: "prob" type: "Softmax" bottom: "fc" top: "prob" }
""" % {'side': SIDE, 'classes': N_CLASSES}


@pytest.fixture
def tiny_net(tmp_path):
    """(deploy prototxt path, weights path) of a tiny net with fixed random
    weights saved by net.save."""
    proto = str(tmp_path / 'deploy.prototxt')
    with open(proto, 'w') as f:
        f.write(DEPLOY)
    net = cortado.Net(proto, cortado.TEST)
    rng = np.random.RandomState(0)
    for name in ('conv', 'fc'):
        w, b = net.params[name][0], net.params[name][1]
        w.data[...] = rng.randn(*w.data.shape) * 0.5
        b.data[...] = rng.randn(*b.data.shape) * 0.1
    weights = str(tmp_path / 'tiny.caffemodel')
    net.save(weights)
    return proto, weights


def _reference_net(proto, weights):
    return cortado.Net(proto, cortado.TEST, weights=weights)


def _forward_one(net, blob):
    """Class probabilities of one preprocessed (3 x 8 x 8) input."""
    net.blobs['data'].data[...] = blob[np.newaxis]
    return np.array(net.forward()['prob'][0], dtype=np.float64).ravel()


def _transformer(mean=None, raw_scale=None, channel_swap=None,
                 input_scale=None):
    t = caffe_io.Transformer({'data': (1, 3, SIDE, SIDE)})
    t.set_transpose('data', (2, 0, 1))
    if mean is not None:
        t.set_mean('data', mean)
    if input_scale is not None:
        t.set_input_scale('data', input_scale)
    if raw_scale is not None:
        t.set_raw_scale('data', raw_scale)
    if channel_swap is not None:
        t.set_channel_swap('data', channel_swap)
    return t


def _images():
    rng = np.random.RandomState(1)
    return [rng.rand(12, 9, 3).astype(np.float32),
            rng.rand(10, 10, 3).astype(np.float32)]


# (y0, y1, x0, x1) crops of a 10 x 10 image for an 8 x 8 net input:
# top-left, top-right, bottom-left, bottom-right, center.
BOXES_10 = [(0, 8, 0, 8), (0, 8, 2, 10), (2, 10, 0, 8), (2, 10, 2, 10),
            (1, 9, 1, 9)]


def test_classifier_attributes(tiny_net):
    clf = Classifier(*tiny_net, image_dims=(10, 10))
    assert isinstance(clf, cortado.Net)
    assert list(clf.crop_dims) == [SIDE, SIDE]
    assert tuple(clf.image_dims) == (10, 10)
    assert clf.inputs[0] == 'data' and clf.outputs[0] == 'prob'
    assert clf.transformer.transpose['data'] == (2, 0, 1)
    # image_dims defaults to the net's input size
    clf2 = Classifier(*tiny_net)
    assert list(clf2.image_dims) == [SIDE, SIDE]


@pytest.mark.parametrize('options', [
    {},
    {'mean': np.array([0.2, 0.5, 0.4]), 'raw_scale': 2.0,
     'channel_swap': (2, 1, 0), 'input_scale': 1.5},
])
def test_classifier_center_crop(tiny_net, options):
    clf = Classifier(*tiny_net, image_dims=(10, 10), **options)
    images = _images()
    pred = clf.predict(images, oversample=False)
    assert pred.shape == (2, N_CLASSES)
    np.testing.assert_allclose(pred.sum(axis=1), 1.0, atol=1e-5)

    ref_net = _reference_net(*tiny_net)
    t = _transformer(**options)
    for n, im in enumerate(images):
        resized = caffe_io.resize_image(im, (10, 10))
        center = resized[1:9, 1:9, :]  # 5 -/+ 4
        expect = _forward_one(ref_net, t.preprocess('data', center))
        np.testing.assert_allclose(pred[n], expect, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize('options', [
    {},
    {'mean': np.array([0.2, 0.5, 0.4]), 'raw_scale': 2.0,
     'channel_swap': (2, 1, 0), 'input_scale': 1.5},
])
def test_classifier_oversample_averages_ten_crops(tiny_net, options):
    clf = Classifier(*tiny_net, image_dims=(10, 10), **options)
    images = _images()
    pred = clf.predict(images)  # oversample=True is the default
    assert pred.shape == (2, N_CLASSES)
    np.testing.assert_allclose(pred.sum(axis=1), 1.0, atol=1e-5)

    ref_net = _reference_net(*tiny_net)
    t = _transformer(**options)
    for n, im in enumerate(images):
        resized = caffe_io.resize_image(im, (10, 10))
        crops = [resized[y0:y1, x0:x1, :] for (y0, y1, x0, x1) in BOXES_10]
        crops += [c[:, ::-1, :] for c in crops]
        probs = [_forward_one(ref_net, t.preprocess('data', c))
                 for c in crops]
        np.testing.assert_allclose(pred[n], np.mean(probs, axis=0),
                                   rtol=1e-4, atol=1e-6)

    # Center-only prediction differs from the 10-crop average in general.
    assert not np.allclose(clf.predict(images, oversample=False), pred,
                           atol=1e-6)


def test_classifier_default_dims_whole_image(tiny_net):
    clf = Classifier(*tiny_net)
    images = _images()
    center = clf.predict(images, oversample=False)
    over = clf.predict(images, oversample=True)
    ref_net = _reference_net(*tiny_net)
    t = _transformer()
    for n, im in enumerate(images):
        resized = caffe_io.resize_image(im, (SIDE, SIDE))
        whole = _forward_one(ref_net, t.preprocess('data', resized))
        mirror = _forward_one(ref_net,
                              t.preprocess('data', resized[:, ::-1, :]))
        np.testing.assert_allclose(center[n], whole, rtol=1e-4, atol=1e-6)
        # all five crops are the whole image: the average of it and its mirror
        np.testing.assert_allclose(over[n], (whole + mirror) / 2,
                                   rtol=1e-4, atol=1e-6)


def test_classifier_single_and_many_images(tiny_net):
    clf = Classifier(*tiny_net, image_dims=(10, 10))
    rng = np.random.RandomState(2)
    images = [rng.rand(9, 11, 3).astype(np.float32) for _ in range(3)]
    assert clf.predict(images[:1]).shape == (1, N_CLASSES)
    many = clf.predict(images, oversample=False)
    assert many.shape == (3, N_CLASSES)
    for n in range(3):  # batching does not change a prediction
        np.testing.assert_allclose(
            clf.predict([images[n]], oversample=False)[0], many[n],
            rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------
# Detector
# ---------------------------------------------------------------------------

@pytest.fixture
def image_file(tmp_path):
    rng = np.random.RandomState(3)
    rgb = rng.randint(0, 256, size=(20, 16, 3)).astype(np.uint8)
    path = str(tmp_path / 'scene.png')
    skimage.io.imsave(path, rgb, check_contrast=False)
    return path


def test_detector_detect_windows(tiny_net, image_file):
    options = {'mean': np.array([0.4, 0.5, 0.6]), 'raw_scale': 1.5,
               'channel_swap': (2, 1, 0)}
    det = Detector(*tiny_net, **options)
    assert isinstance(det, cortado.Net)
    assert list(det.crop_dims) == [SIDE, SIDE, 3]
    windows = [np.array([0, 0, 8, 8]), np.array([3, 2, 17, 12]),
               np.array([5, 5, 20, 16])]
    dets = det.detect_windows([(image_file, windows)])
    assert len(dets) == 3

    ref_net = _reference_net(*tiny_net)
    t = _transformer(**options)
    image = caffe_io.load_image(image_file)
    for d, w in zip(dets, windows):
        assert d['filename'] == image_file
        assert d['window'] is w
        assert d['prediction'].shape == (N_CLASSES,)
        np.testing.assert_allclose(d['prediction'].sum(), 1.0, atol=1e-5)
        window_im = image[w[0]:w[2], w[1]:w[3]]
        expect = _forward_one(ref_net, t.preprocess('data', window_im))
        np.testing.assert_allclose(d['prediction'], expect,
                                   rtol=1e-4, atol=1e-6)


def test_detector_accepts_iterator_of_images(tiny_net, image_file):
    det = Detector(*tiny_net)
    windows = [np.array([0, 0, 10, 10])]
    dets = det.detect_windows(iter([(image_file, windows),
                                    (image_file, windows)]))
    assert len(dets) == 2
    np.testing.assert_allclose(dets[0]['prediction'], dets[1]['prediction'])


def test_detector_context_pad(tiny_net, image_file):
    mean = np.array([0.25, 0.5, 0.75])
    det = Detector(*tiny_net, mean=mean, raw_scale=2.0,
                   channel_swap=(2, 1, 0), context_pad=2)
    assert det.context_pad == 2
    # The padding mean in raw image space (H x W x K, RGB order, unscaled).
    np.testing.assert_allclose(np.broadcast_to(det.crop_mean, (1, 1, 3))[0, 0],
                               mean[[2, 1, 0]] / 2.0)

    image = caffe_io.load_image(image_file)
    inside = det.crop(image, np.array([6, 5, 13, 11]))
    border = det.crop(image, np.array([0, 0, 6, 6]))  # context out of bounds
    for c in (inside, border):
        assert c.shape == (SIDE, SIDE, 3)
    # Out-of-bounds context is filled with the mean.
    np.testing.assert_allclose(border[0, 0], mean[[2, 1, 0]] / 2.0,
                               atol=1e-6)

    dets = det.detect_windows([(image_file, [np.array([6, 5, 13, 11]),
                                             np.array([0, 0, 6, 6])])])
    assert len(dets) == 2
    for d in dets:
        assert d['prediction'].shape == (N_CLASSES,)
        np.testing.assert_allclose(d['prediction'].sum(), 1.0, atol=1e-5)


def test_detector_without_context_crops_plainly(tiny_net):
    det = Detector(*tiny_net)
    assert not det.context_pad
    im = np.random.RandomState(4).rand(10, 12, 3)
    np.testing.assert_array_equal(det.crop(im, np.array([1, 2, 7, 9])),
                                  im[1:7, 2:9])


def test_detector_selective_search_needs_module(tiny_net, image_file):
    try:
        import selective_search_ijcv_with_python  # noqa: F401
        pytest.skip('selective_search_ijcv_with_python is installed')
    except ImportError:
        pass
    det = Detector(*tiny_net)
    with pytest.raises(ImportError, match='selective_search_ijcv_with_python'):
        det.detect_selective_search([image_file])
