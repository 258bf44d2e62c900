"""Tests of cortado.coord_map (pycaffe's coord_map): coordinate maps through
conv / pool / deconv / pass-through / Crop layers, padding and anisotropic and
N-d parameters, the crop() helper (including the crop offsets of FCN-32s,
FCN-16s and FCN-8s style VGG nets), and the errors for unconnected tops,
scale mismatches, negative crops, axis mismatches and undefined maps.

Pure Python (no C++ binding).  Run with
    PYTHONPATH=<dir holding cortado> python3 -m pytest tests/python
"""

import numpy as np
import pytest

import cortado as caffe
from cortado import layers as L, params as P
from cortado.coord_map import (AxisMismatchException, UndefinedMapException,
                               compose, conv_params, coord_map,
                               coord_map_from_to, crop, inverse)
from cortado.proto import caffe_pb2


def coord_net_spec(ks=3, stride=1, pad=0, pool=2, dstride=2, dpad=0):
    """
    Net spec for the simple conv-pool-deconv pattern common to all
    coordinate mapping tests.
    """
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[2, 1, 100, 100]))
    n.aux = L.Input(shape=dict(dim=[2, 1, 20, 20]))
    n.conv = L.Convolution(
        n.data, num_output=10, kernel_size=ks, stride=stride, pad=pad)
    n.pool = L.Pooling(
        n.conv, pool=P.Pooling.MAX, kernel_size=pool, stride=pool, pad=0)
    # for upsampling kernel size is 2x stride
    try:
        deconv_ks = [s * 2 for s in dstride]
    except TypeError:
        deconv_ks = dstride * 2
    n.deconv = L.Deconvolution(
        n.pool, num_output=10, kernel_size=deconv_ks, stride=dstride,
        pad=dpad)
    return n


# --- Caffe's test_coord_map.py ----------------------------------------------

def test_conv_pool_deconv():
    """Map through conv, pool, and deconv."""
    n = coord_net_spec()
    # identity for 2x pool, 2x deconv
    ax, a, b = coord_map_from_to(n.deconv, n.data)
    assert ax == 1
    assert a == 1
    assert b == 0
    # shift-by-one for 4x pool, 4x deconv
    n = coord_net_spec(pool=4, dstride=4)
    ax, a, b = coord_map_from_to(n.deconv, n.data)
    assert ax == 1
    assert a == 1
    assert b == -1


def test_pass():
    """A pass-through layer (ReLU) and conv (1x1, stride 1, pad 0) both do
    identity mapping."""
    n = coord_net_spec()
    ax, a, b = coord_map_from_to(n.deconv, n.data)
    n.relu = L.ReLU(n.deconv)
    n.conv1x1 = L.Convolution(
        n.relu, num_output=10, kernel_size=1, stride=1, pad=0)
    for top in [n.relu, n.conv1x1]:
        ax_pass, a_pass, b_pass = coord_map_from_to(top, n.data)
        assert ax == ax_pass
        assert a == a_pass
        assert b == b_pass


@pytest.mark.parametrize('pad', [0, 1, 3, 10])
def test_padding(pad):
    """Padding conv adds offset while padding deconv subtracts offset."""
    n = coord_net_spec()
    ax, a, b = coord_map_from_to(n.deconv, n.data)
    # conv padding
    n = coord_net_spec(pad=pad)
    _, a_pad, b_pad = coord_map_from_to(n.deconv, n.data)
    assert a == a_pad
    assert b - pad == b_pad
    # deconv padding
    n = coord_net_spec(dpad=pad)
    _, a_pad, b_pad = coord_map_from_to(n.deconv, n.data)
    assert a == a_pad
    assert b + pad == b_pad
    # pad both to cancel out
    n = coord_net_spec(pad=pad, dpad=pad)
    _, a_pad, b_pad = coord_map_from_to(n.deconv, n.data)
    assert a == a_pad
    assert b == b_pad


def test_multi_conv():
    """Multiple bottoms/tops of a layer are identically mapped."""
    n = coord_net_spec()
    # multi bottom/top
    n.conv_data, n.conv_aux = L.Convolution(
        n.data, n.aux, ntop=2, num_output=10, kernel_size=5, stride=2,
        pad=0)
    ax1, a1, b1 = coord_map_from_to(n.conv_data, n.data)
    ax2, a2, b2 = coord_map_from_to(n.conv_aux, n.aux)
    assert ax1 == ax2
    assert a1 == a2
    assert b1 == b2


def test_rect():
    """Anisotropic mapping is equivalent to its isotropic parts."""
    n3x3 = coord_net_spec(ks=3, stride=1, pad=0)
    n5x5 = coord_net_spec(ks=5, stride=2, pad=10)
    n3x5 = coord_net_spec(ks=[3, 5], stride=[1, 2], pad=[0, 10])
    ax_3x3, a_3x3, b_3x3 = coord_map_from_to(n3x3.deconv, n3x3.data)
    ax_5x5, a_5x5, b_5x5 = coord_map_from_to(n5x5.deconv, n5x5.data)
    ax_3x5, a_3x5, b_3x5 = coord_map_from_to(n3x5.deconv, n3x5.data)
    assert ax_3x3 == ax_5x5 == ax_3x5
    assert a_3x3 == a_3x5[0]
    assert b_3x3 == b_3x5[0]
    assert a_5x5 == a_3x5[1]
    assert b_5x5 == b_3x5[1]


def test_nd_conv():
    """ND conv maps the same way in more dimensions."""
    n = caffe.NetSpec()
    # define data with 3 spatial dimensions, otherwise the same net
    n.data = L.Input(shape=dict(dim=[2, 3, 100, 100, 100]))
    n.conv = L.Convolution(
        n.data, num_output=10, kernel_size=[3, 3, 3], stride=[1, 1, 1],
        pad=[0, 1, 2])
    n.pool = L.Pooling(
        n.conv, pool=P.Pooling.MAX, kernel_size=2, stride=2, pad=0)
    n.deconv = L.Deconvolution(
        n.pool, num_output=10, kernel_size=4, stride=2, pad=0)
    ax, a, b = coord_map_from_to(n.deconv, n.data)
    assert ax == 1
    assert len(a) == len(b) == 3
    assert np.all(a == 1)
    assert b[0] - 1 == b[1]
    assert b[1] - 1 == b[2]


@pytest.mark.parametrize('offset', [0, 4, 10])
def test_crop_of_crop(offset):
    """Map coordinates through a Crop layer: crop an already-cropped output
    to the input and check the change in offset."""
    n = coord_net_spec()
    ax, a, b = coord_map_from_to(n.deconv, n.data)
    n.crop = L.Crop(n.deconv, n.data, axis=2, offset=offset)
    ax_crop, a_crop, b_crop = coord_map_from_to(n.crop, n.data)
    assert ax == ax_crop
    assert a == a_crop
    assert b + offset == b_crop


def test_crop_helper():
    """Define a Crop layer by crop(): it crops its first input to the second
    one with the computed axis and offset."""
    n = coord_net_spec(pool=4, dstride=4)  # shift by one
    n.crop = crop(n.deconv, n.data)
    assert n.crop.fn.type_name == 'Crop'
    assert n.crop.fn.inputs == (n.deconv, n.data)
    layer = n.to_proto().layer[-1]
    assert (layer.name, layer.type, list(layer.bottom), list(layer.top)) == \
        ('crop', 'Crop', ['deconv', 'data'], ['crop'])
    assert layer.crop_param.axis == 2
    assert list(layer.crop_param.offset) == [1]
    # after the crop, the cropped top is aligned with the data
    ax, a, b = coord_map_from_to(n.crop, n.data)
    assert (ax, a, b) == (1, 1, 0)


def test_catch_unconnected():
    """Catch mapping spatially unconnected tops."""
    n = coord_net_spec()
    n.ip = L.InnerProduct(n.deconv, num_output=10)
    with pytest.raises(RuntimeError):
        coord_map_from_to(n.ip, n.data)


def test_catch_scale_mismatch():
    """Catch incompatible scales, such as when the top to be cropped is
    mapped to a differently strided reference top."""
    n = coord_net_spec(pool=3, dstride=2)  # pool 3x but deconv 2x
    with pytest.raises(AssertionError):
        crop(n.deconv, n.data)


def test_catch_negative_crop():
    """Catch impossible offsets, such as when the top to be cropped is
    mapped to a larger reference top."""
    n = coord_net_spec(dpad=10)  # make output smaller than input
    with pytest.raises(AssertionError):
        crop(n.deconv, n.data)


# --- FCN: crop offsets of VGG-16 based fully convolutional nets -------------

def _conv_relu(bottom, nout, ks=3, stride=1, pad=1):
    conv = L.Convolution(bottom, kernel_size=ks, stride=stride,
                         num_output=nout, pad=pad)
    return conv, L.ReLU(conv, in_place=True)


def _max_pool(bottom, ks=2, stride=2):
    return L.Pooling(bottom, pool=P.Pooling.MAX, kernel_size=ks,
                     stride=stride)


def fcn_vgg16(n_classes=21):
    """The VGG-16 trunk of the FCN papers (conv1_1 padded by 100, fc6/fc7 as
    convolutions), through score_fr."""
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 3, 500, 500]))
    n.conv1_1, n.relu1_1 = _conv_relu(n.data, 64, pad=100)
    n.conv1_2, n.relu1_2 = _conv_relu(n.relu1_1, 64)
    n.pool1 = _max_pool(n.relu1_2)
    n.conv2_1, n.relu2_1 = _conv_relu(n.pool1, 128)
    n.conv2_2, n.relu2_2 = _conv_relu(n.relu2_1, 128)
    n.pool2 = _max_pool(n.relu2_2)
    n.conv3_1, n.relu3_1 = _conv_relu(n.pool2, 256)
    n.conv3_2, n.relu3_2 = _conv_relu(n.relu3_1, 256)
    n.conv3_3, n.relu3_3 = _conv_relu(n.relu3_2, 256)
    n.pool3 = _max_pool(n.relu3_3)
    n.conv4_1, n.relu4_1 = _conv_relu(n.pool3, 512)
    n.conv4_2, n.relu4_2 = _conv_relu(n.relu4_1, 512)
    n.conv4_3, n.relu4_3 = _conv_relu(n.relu4_2, 512)
    n.pool4 = _max_pool(n.relu4_3)
    n.conv5_1, n.relu5_1 = _conv_relu(n.pool4, 512)
    n.conv5_2, n.relu5_2 = _conv_relu(n.relu5_1, 512)
    n.conv5_3, n.relu5_3 = _conv_relu(n.relu5_2, 512)
    n.pool5 = _max_pool(n.relu5_3)
    n.fc6, n.relu6 = _conv_relu(n.pool5, 4096, ks=7, pad=0)
    n.drop6 = L.Dropout(n.relu6, dropout_ratio=0.5, in_place=True)
    n.fc7, n.relu7 = _conv_relu(n.drop6, 4096, ks=1, pad=0)
    n.drop7 = L.Dropout(n.relu7, dropout_ratio=0.5, in_place=True)
    n.score_fr = L.Convolution(n.drop7, num_output=n_classes, kernel_size=1,
                               pad=0)
    return n


def _deconv(bottom, ks, stride, n_classes=21):
    return L.Deconvolution(bottom, convolution_param=dict(
        num_output=n_classes, kernel_size=ks, stride=stride,
        bias_term=False), param=[dict(lr_mult=0)])


def _crop_layer(net, name):
    return [l for l in net.layer if l.name == name][0]


def test_fcn32s_crop_offset():
    n = fcn_vgg16()
    n.upscore = _deconv(n.score_fr, 64, 32)
    ax, a, b = coord_map_from_to(n.upscore, n.data)
    assert ax == 1 and np.all(a == 1) and np.all(b == -19)
    n.score = crop(n.upscore, n.data)
    layer = _crop_layer(n.to_proto(), 'score')
    assert list(layer.bottom) == ['upscore', 'data']
    assert layer.crop_param.axis == 2
    assert list(layer.crop_param.offset) == [19]


def test_fcn16s_crop_offsets():
    n = fcn_vgg16()
    n.upscore2 = _deconv(n.score_fr, 4, 2)
    n.score_pool4 = L.Convolution(n.pool4, num_output=21, kernel_size=1,
                                  pad=0)
    n.score_pool4c = crop(n.score_pool4, n.upscore2)
    n.fuse_pool4 = L.Eltwise(n.upscore2, n.score_pool4c,
                             operation=P.Eltwise.SUM)
    n.upscore16 = _deconv(n.fuse_pool4, 32, 16)
    n.score = crop(n.upscore16, n.data)
    net = n.to_proto()
    assert list(_crop_layer(net, 'score_pool4c').crop_param.offset) == [5]
    assert list(_crop_layer(net, 'score').crop_param.offset) == [27]
    assert _crop_layer(net, 'score').crop_param.axis == 2


def test_fcn8s_crop_offsets():
    n = fcn_vgg16()
    n.upscore2 = _deconv(n.score_fr, 4, 2)
    n.score_pool4 = L.Convolution(n.pool4, num_output=21, kernel_size=1,
                                  pad=0)
    n.score_pool4c = crop(n.score_pool4, n.upscore2)
    n.fuse_pool4 = L.Eltwise(n.upscore2, n.score_pool4c,
                             operation=P.Eltwise.SUM)
    n.upscore_pool4 = _deconv(n.fuse_pool4, 4, 2)
    n.score_pool3 = L.Convolution(n.pool3, num_output=21, kernel_size=1,
                                  pad=0)
    n.score_pool3c = crop(n.score_pool3, n.upscore_pool4)
    n.fuse_pool3 = L.Eltwise(n.upscore_pool4, n.score_pool3c,
                             operation=P.Eltwise.SUM)
    n.upscore8 = _deconv(n.fuse_pool3, 16, 8)
    n.score = crop(n.upscore8, n.data)
    net = n.to_proto()
    offsets = {name: list(_crop_layer(net, name).crop_param.offset)
               for name in ('score_pool4c', 'score_pool3c', 'score')}
    assert offsets == {'score_pool4c': [5], 'score_pool3c': [9],
                       'score': [31]}
    # the whole net still serializes to prototxt that parses back
    from google.protobuf import text_format
    assert text_format.Merge(str(net), caffe_pb2.NetParameter()) == net


# --- the map primitives and the exceptions ----------------------------------

def test_layer_maps():
    n = coord_net_spec(ks=5, stride=2, pad=1)
    ax, a, b = coord_map(n.conv.fn)
    assert ax == 1 and a == 0.5 and b == (1 - 2) / 2
    ax, a, b = coord_map(n.deconv.fn)  # kernel 4, stride 2, pad 0
    assert ax == 1 and a == 2 and b == 1.5
    assert coord_map(L.ReLU(n.conv).fn) == (None, 1, 0)
    ax, a, b = coord_map(L.Crop(n.conv, n.data, axis=2, offset=3).fn)
    assert ax == 1 and a == 1 and b == -3


def test_dilation_and_param_dicts():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 64, 64]))
    # dilated 3x3 kernel spans 5 pixels: same map as a 5x5 kernel
    n.dil = L.Convolution(n.data, convolution_param=dict(
        num_output=1, kernel_size=3, dilation=2, pad=2))
    n.pool = L.Pooling(n.data, pooling_param=dict(
        pool=P.Pooling.AVE, kernel_size=3, stride=3, pad=1))
    axis, stride, ks, pad = conv_params(n.dil.fn)
    assert axis == 1 and stride == 1 and ks == 5 and pad == 2
    assert coord_map_from_to(n.dil, n.data) == (1, 1, 0)
    ax, a, b = coord_map(n.pool.fn)
    assert ax == 1 and a == pytest.approx(1 / 3) and b == pytest.approx(0)


def test_undefined_map_exception():
    n = coord_net_spec()
    ip = L.InnerProduct(n.deconv, num_output=10)
    with pytest.raises(UndefinedMapException):
        coord_map(ip.fn)
    gp = L.Pooling(n.conv, pool=P.Pooling.AVE, global_pooling=True)
    with pytest.raises(UndefinedMapException):
        coord_map(gp.fn)


def test_axis_mismatch_exception():
    with pytest.raises(AxisMismatchException):
        compose((1, 1, 0), (2, 1, 0))
    assert compose((None, 2, 1), (3, 1, 0)) == (3, 2, 1)
    assert compose((3, 2, 1), (None, 1, 0)) == (3, 2, 1)
    # a Crop over axes from 3 on (map axis 2) after a conv on axis 1
    n = coord_net_spec()
    n.crop = L.Crop(n.deconv, n.data, axis=3, offset=0)
    with pytest.raises(AxisMismatchException):
        coord_map_from_to(n.crop, n.data)


def test_compose_inverse():
    m = (1, np.array([0.5]), np.array([-1.5]))
    ax, a, b = compose(m, inverse(m))
    assert ax == 1 and np.all(a == 1) and np.all(b == 0)


def test_legacy_hw_params_rejected():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 8, 8]))
    n.conv = L.Convolution(n.data, num_output=1, kernel_h=3, kernel_w=3)
    with pytest.raises(AssertionError, match='legacy'):
        coord_map_from_to(n.conv, n.data)
