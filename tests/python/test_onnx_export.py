"""test_onnx_export.py: the export_onnx tool against onnx's checker (full check) and OpenCV's dnn as an
independent ONNX runtime: LeNet, cifar10_quick, CaffeNet, GoogLeNet and ResNet-50 with random weights
compute what Cortado computes (max |a - b| / max |b| <= 1e-4), at batch 1 and, through the symbolic
batch axis, batch 2; a training net loses its data, loss and accuracy layers; names of inputs and
outputs stay; in-place layers, Caffe's ceil-mode pooling edges, BatchNorm's scale factor and a zoo of
smaller layers (compared with OpenCV or numpy); refusals are one line and exit code 1."""
import os
import subprocess

import numpy as np
import pytest

import cortado
from conftest import BUILD, REPO, write_text

if not cortado.has_onnx():
    pytest.skip('this build has no ONNX support (libonnx-dev)', allow_module_level=True)
onnx = pytest.importorskip('onnx', reason='the onnx Python package is not installed')
cv2 = pytest.importorskip('cv2', reason='OpenCV (cv2) is not installed')
from onnx import numpy_helper  # noqa: E402  (after the skip)

EXPORT = BUILD / 'tools' / 'export_onnx'
TOLERANCE = 1e-4


def run_export(net, weights, out, *flags, cwd=None):
    """Runs export_onnx with glog's INFO and WARNING lines off, so stderr holds only an error."""
    return subprocess.run([str(EXPORT), *flags, str(net), str(weights) if weights else 'none', str(out)],
                          capture_output=True, text=True, timeout=120, cwd=cwd,
                          env=dict(os.environ, GLOG_minloglevel='2'))


def export(net, weights, out, *flags, cwd=None):
    """Exports and returns the model after onnx's full check."""
    result = run_export(net, weights, out, *flags, cwd=cwd)
    assert result.returncode == 0, result.stderr[-2000:]
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    return model


def random_weights(net_path, weights_path, seed=0, bn_factor=1.0):
    """Fills every parameter with random values (He-scaled weights; BatchNorm statistics as running
    sums with the scale factor `bn_factor`; Scale near 1) and saves them."""
    net = cortado.Net(str(net_path), cortado.TEST)
    rng = np.random.RandomState(seed)
    for name, blobs in net.params.items():
        kind = net.layer_dict[name].type
        if kind == 'BatchNorm':
            channels = blobs[0].data.shape[0]
            blobs[0].data[...] = 0.1 * rng.randn(channels) * bn_factor
            blobs[1].data[...] = (0.5 + rng.rand(channels)) * bn_factor
            blobs[2].data[...] = bn_factor
            continue
        for k, blob in enumerate(blobs):
            data = blob.data
            if kind == 'Scale' and k == 0:
                data[...] = 1 + 0.1 * rng.randn(*data.shape)
            elif data.ndim >= 2:
                fan_in = data.size // data.shape[0]
                data[...] = rng.randn(*data.shape) * np.sqrt(2.0 / fan_in)
            else:
                data[...] = 0.1 * rng.randn(*data.shape)
    net.save(str(weights_path))


def cortado_forward(net_path, weights_path, inputs, inner=()):
    net = (cortado.Net(str(net_path), str(weights_path), cortado.TEST) if weights_path
           else cortado.Net(str(net_path), cortado.TEST))
    for name, x in inputs.items():
        net.blobs[name].reshape(*x.shape)
    net.reshape()
    values = {name: np.array(value) for name, value in net.forward(**inputs).items()}
    values.update({name: np.array(net.blobs[name].data) for name in inner})
    return values


def opencv_forward(onnx_path, inputs, outputs):
    net = cv2.dnn.readNetFromONNX(str(onnx_path))
    net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
    net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
    for name, x in inputs.items():
        net.setInput(x, name)
    values = net.forward(list(outputs))
    return dict(zip(outputs, values))


def relative_error(actual, expected):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    assert actual.size == expected.size, (actual.shape, expected.shape)
    return np.abs(actual.reshape(expected.shape) - expected).max() / max(np.abs(expected).max(), 1e-30)


def compare_with_opencv(net_path, weights_path, onnx_path, inputs, inner=()):
    """Cortado's outputs and OpenCV's on the exported model, and the blobs `inner`, each written by the
    layer of its name (OpenCV calls the node's layer 'onnx_node!<name>'); returns the largest relative error."""
    expected = cortado_forward(net_path, weights_path, inputs, inner)
    outputs = ['onnx_node!' + name if name in inner else name for name in expected]
    actual = dict(zip(expected, opencv_forward(onnx_path, inputs, outputs).values()))
    worst = 0.0
    for name in expected:
        error = relative_error(actual[name], expected[name])
        assert error <= TOLERANCE, (name, error)
        worst = max(worst, error)
    return worst


def graph_io(model):
    def dims(value):
        return [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]
    return ({v.name: dims(v) for v in model.graph.input}, {v.name: dims(v) for v in model.graph.output})


# (name, prototxt, input, its shape without the batch, BatchNorm scale factor, the logits blob: random
# weights saturate the Softmax of the deeper nets, so the logits before it are compared too)
ZOO_NETS = [
    ('lenet', REPO / 'models/mnist/lenet.prototxt', 'data', (1, 28, 28), 1.0, 'ip2'),
    ('cifar10_quick', REPO / 'models/cifar10/cifar10_quick.prototxt', 'data', (3, 32, 32), 1.0, 'ip2'),
    ('caffenet', REPO / 'tests/compat/caffe-models/models/bvlc_reference_caffenet/deploy.prototxt', 'data',
     (3, 227, 227), 1.0, 'fc8'),
    ('googlenet', REPO / 'tests/compat/caffe-models/models/bvlc_googlenet/deploy.prototxt', 'data',
     (3, 224, 224), 1.0, 'loss3/classifier'),
    ('resnet50', REPO / 'tests/compat/caffe-models/resnet/ResNet-50-deploy.prototxt', 'data', (3, 224, 224),
     999.982, 'fc1000'),  # the scale factor of a trained Caffe BatchNorm (1 / (1 - 0.999) after many steps)
]


@pytest.mark.parametrize('name,net,input_name,shape,bn_factor,logits', ZOO_NETS, ids=[n[0] for n in ZOO_NETS])
def test_reference_nets_match_opencv(tmp_path, name, net, input_name, shape, bn_factor, logits):
    weights = tmp_path / (name + '.caffemodel')
    random_weights(net, weights, seed=len(name), bn_factor=bn_factor)
    onnx_path = tmp_path / (name + '.onnx')
    model = export(net, weights, onnx_path, '--input_shape=%s:1,%d,%d,%d' % ((input_name,) + shape))
    inputs, outputs = graph_io(model)
    assert list(inputs) == [input_name] and inputs[input_name] == ['N'] + list(shape)
    assert all(dims[0] == 'N' for dims in outputs.values())
    rng = np.random.RandomState(1)
    for batch in (1, 2):
        x = rng.rand(batch, *shape).astype(np.float32) * 2 - 1
        error = compare_with_opencv(net, weights, onnx_path, {input_name: x}, inner=(logits,))
        print('%s batch %d: max relative error %.3g' % (name, batch, error))


def test_fixed_batch_and_names(tmp_path):
    net = REPO / 'models/mnist/lenet.prototxt'
    model = export(net, None, tmp_path / 'fixed.onnx', '--fixed_batch')
    inputs, outputs = graph_io(model)
    assert inputs == {'data': [64, 1, 28, 28]}
    assert outputs == {'prob': [64, 10]}
    model = export(net, None, tmp_path / 'dynamic.onnx')
    assert graph_io(model) == ({'data': ['N', 1, 28, 28]}, {'prob': ['N', 10]})
    assert model.opset_import[0].version == 13 and model.producer_name == 'Cortado'
    assert model.graph.name == 'LeNet'
    # Nodes are named after the layers, initializers after their layer.
    names = {node.name for node in model.graph.node}
    assert {'conv1', 'pool1', 'conv2', 'pool2', 'ip1', 'relu1', 'ip2', 'prob'} <= names
    assert {'conv1/weight', 'conv1/bias', 'ip2/weight'} <= {t.name for t in model.graph.initializer}


def test_training_net_exports_without_data_and_losses(tmp_path):
    net = REPO / 'models/mnist/lenet_train_test.prototxt'
    model = export(net, None, tmp_path / 'train.onnx', '--input_shape=data:1,1,28,28')
    inputs, outputs = graph_io(model)
    assert inputs == {'data': ['N', 1, 28, 28]}
    assert list(outputs) == ['ip2']
    kinds = {node.op_type for node in model.graph.node}
    assert not kinds & {'Softmax', 'ArgMax', 'TopK'}  # SoftmaxWithLoss and Accuracy are gone
    # Without --input_shape the Data layer reads one record to learn the shape (its LMDB's path is
    # relative to the repository) ...
    if (REPO / 'data/mnist/mnist_test_lmdb').exists():
        learned = export(net, None, tmp_path / 'learned.onnx', cwd=REPO)
        assert graph_io(learned)[0] == {'data': ['N', 1, 28, 28]}
    # ... and where the LMDB is not, the error says how to give the shape.
    result = run_export(net, None, tmp_path / 'no_shape.onnx', cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "layer 'mnist' (Data)" in lines[0] and '--input_shape=data:' in lines[0]
    assert not (tmp_path / 'no_shape.onnx').exists()


IN_PLACE = """
name: "in_place"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 dim: 8 dim: 8 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 4 kernel_size: 3 pad: 1 } }
layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv" }
layer { name: "scale" type: "Scale" bottom: "conv" top: "conv" scale_param { bias_term: true } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" relu_param { negative_slope: 0.1 } }
layer { name: "drop" type: "Dropout" bottom: "conv" top: "conv" }
layer { name: "branch" type: "Power" bottom: "conv" top: "branch" power_param { scale: 2 shift: 0.5 } }
layer { name: "sum" type: "Eltwise" bottom: "conv" bottom: "branch" top: "sum"
        eltwise_param { coeff: 1 coeff: -0.5 } }
"""


def test_in_place_layers_and_batch_norm_factor(tmp_path):
    net = write_text(tmp_path, 'in_place.prototxt', IN_PLACE)
    weights = tmp_path / 'in_place.caffemodel'
    random_weights(net, weights, bn_factor=0.37)
    model = export(net, weights, tmp_path / 'in_place.onnx')
    # Every value is written once; the last writer of a blob writes the blob's own name.
    written = [out for node in model.graph.node for out in node.output]
    assert len(written) == len(set(written))
    assert 'conv' in written and [n.output[0] for n in model.graph.node if n.name == 'drop'] == ['conv']
    assert graph_io(model)[1] == {'sum': ['N', 4, 8, 8]}
    # The BatchNorm's raw blobs and its factor are in the model; Divs make the statistics.
    initializers = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    trained = cortado.Net(str(net), str(weights), cortado.TEST)
    np.testing.assert_array_equal(initializers['bn/mean'], trained.params['bn'][0].data)
    np.testing.assert_array_equal(initializers['bn/variance'], trained.params['bn'][1].data)
    np.testing.assert_array_equal(initializers['bn/scale_factor'], np.float32(0.37))
    assert [n.op_type for n in model.graph.node if n.name.startswith('bn/')] == ['Div', 'Div']
    x = np.random.RandomState(2).randn(2, 3, 8, 8).astype(np.float32)
    compare_with_opencv(net, weights, tmp_path / 'in_place.onnx', {'data': x})


POOLING = """
name: "pooling"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 2 dim: %(h)d dim: %(w)d } } }
layer { name: "pool" type: "Pooling" bottom: "data" top: "pool"
        pooling_param { pool: %(pool)s kernel_size: %(k)d stride: %(s)d pad: %(p)d %(extra)s } }
"""

POOLING_CASES = [  # (pool, H, W, kernel, stride, pad, extra): ceil overhang, pads, the edge-window rule, floor
    ('MAX', 7, 9, 3, 2, 1, ''), ('AVE', 7, 9, 3, 2, 1, ''), ('MAX', 6, 6, 3, 2, 0, ''), ('AVE', 6, 6, 3, 2, 0, ''),
    ('AVE', 5, 5, 2, 2, 1, ''), ('MAX', 5, 5, 2, 2, 1, ''), ('AVE', 8, 8, 3, 3, 1, ''), ('AVE', 10, 7, 4, 3, 2, ''),
    ('AVE', 7, 7, 3, 2, 1, 'round_mode: FLOOR'), ('MAX', 6, 6, 2, 3, 0, 'round_mode: FLOOR'),
    ('AVE', 7, 9, 3, 2, 1, 'global_pooling: true'), ('MAX', 5, 6, 1, 1, 0, 'global_pooling: true'),
]


@pytest.mark.parametrize('pool,h,w,k,s,p,extra', POOLING_CASES)
def test_pooling_edges_match(tmp_path, pool, h, w, k, s, p, extra):
    text = POOLING % dict(pool=pool, h=h, w=w, k=k, s=s, p=p, extra=extra)
    if 'global' in extra:
        text = text.replace('kernel_size: %d stride: %d pad: %d ' % (k, s, p), '')
    net = write_text(tmp_path, 'pool.prototxt', text)
    export(net, None, tmp_path / 'pool.onnx')
    x = np.random.RandomState(3).randn(2, 2, h, w).astype(np.float32)
    compare_with_opencv(net, None, tmp_path / 'pool.onnx', {'data': x})


# ---- a zoo of layers -------------------------------------------------------------------------------
# OpenCV 4.6's dnn lacks some operators as the exporter writes them (Split with its sizes as an input,
# Clip's bounds as inputs, Gemm without transB, Greater, Tile, TopK, ReduceSum with axes as an input,
# ...): those cases run in this small numpy evaluator of the ONNX operators the exporter writes.

def _reduce(function):
    def run(x, a):
        axes = tuple(a['axes']) if 'axes' in a else tuple(x[1])
        return function(x[0], axis=axes, keepdims=bool(a.get('keepdims', 1)))
    return run


def _argmax(x, a):
    data, axis = x[0], a['axis']
    if a.get('select_last_index', 0):
        flipped = np.flip(data, axis)
        index = data.shape[axis] - 1 - np.argmax(flipped, axis)
    else:
        index = np.argmax(data, axis)
    return np.expand_dims(index, axis) if a.get('keepdims', 1) else index


def _topk(x, a):
    k, axis = int(x[1][0]), a.get('axis', -1)
    order = np.argsort(-x[0], axis=axis, kind='stable')
    index = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x[0], index, axis), index


def _reshape(x, a):
    shape = [x[0].shape[i] if d == 0 else d for i, d in enumerate(x[1])]
    return x[0].reshape(shape)


def _pad(x, a):
    pads = list(x[1])
    half = len(pads) // 2
    return np.pad(x[0], list(zip(pads[:half], pads[half:])))


def _slice(x, a):
    index = [slice(None)] * x[0].ndim
    for start, end, axis in zip(x[1], x[2], x[3]):
        index[axis] = slice(start, end)
    return x[0][tuple(index)]


def _softmax(x, a):
    e = np.exp(x[0] - x[0].max(axis=a.get('axis', -1), keepdims=True))
    return e / e.sum(axis=a.get('axis', -1), keepdims=True)


NUMPY_OPS = {
    'Identity': lambda x, a: x[0], 'Add': lambda x, a: x[0] + x[1], 'Sub': lambda x, a: x[0] - x[1],
    'Mul': lambda x, a: x[0] * x[1], 'Div': lambda x, a: x[0] / x[1], 'Pow': lambda x, a: x[0] ** x[1],
    'Max': lambda x, a: np.maximum.reduce(x), 'Sum': lambda x, a: sum(x), 'Abs': lambda x, a: np.abs(x[0]),
    'Exp': lambda x, a: np.exp(x[0]), 'Log': lambda x, a: np.log(x[0]), 'Sqrt': lambda x, a: np.sqrt(x[0]),
    'Sigmoid': lambda x, a: 1 / (1 + np.exp(-x[0])), 'Tanh': lambda x, a: np.tanh(x[0]),
    'Relu': lambda x, a: np.maximum(x[0], 0), 'Greater': lambda x, a: x[0] > x[1],
    'Cast': lambda x, a: x[0].astype({1: np.float32, 7: np.int64}[a['to']]),
    'Clip': lambda x, a: np.clip(x[0], x[1], x[2]),
    'Flatten': lambda x, a: x[0].reshape(int(np.prod(x[0].shape[:a.get('axis', 1)])), -1),
    'Gemm': lambda x, a: x[0] @ (x[1].T if a.get('transB', 0) else x[1]) + (x[2] if len(x) > 2 else 0),
    'Reshape': _reshape, 'Concat': lambda x, a: np.concatenate(x, axis=a['axis']),
    'Split': lambda x, a: tuple(np.split(x[0], np.cumsum(x[1])[:-1], axis=a.get('axis', 0))),
    'ArgMax': _argmax, 'TopK': _topk, 'ReduceMax': _reduce(np.max), 'ReduceMean': _reduce(np.mean),
    'ReduceSum': _reduce(np.sum), 'ReduceSumSquare': _reduce(lambda v, **k: np.sum(v * v, **k)),
    'Tile': lambda x, a: np.tile(x[0], x[1]), 'Gather': lambda x, a: np.take(x[0], x[1], axis=a.get('axis', 0)),
    'Slice': _slice, 'Pad': _pad, 'Softmax': _softmax,
    'GlobalMaxPool': lambda x, a: x[0].max(axis=(2, 3), keepdims=True),
    'GlobalAveragePool': lambda x, a: x[0].mean(axis=(2, 3), keepdims=True),
}


def numpy_forward(model, inputs):
    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    values.update(inputs)
    for node in model.graph.node:
        attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        result = NUMPY_OPS[node.op_type]([values[name] for name in node.input], attributes)
        for name, value in zip(node.output, result if isinstance(result, tuple) else (result,)):
            values[name] = value
    return {output.name: values[output.name] for output in model.graph.output}


ZOO_HEAD = """name: "zoo"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 4 dim: 6 dim: 6 } } }
"""
ZOO = {  # name: (layers after the Input "data" 2x4x6x6, what computes the exported model)
    'conv_dilated_grouped': ('layer { name: "l" type: "Convolution" bottom: "data" top: "y" convolution_param '
                             '{ num_output: 6 kernel_size: 3 pad: 2 dilation: 2 group: 2 stride: 2 } }', 'opencv'),
    'deconv': ('layer { name: "l" type: "Deconvolution" bottom: "data" top: "y" convolution_param '
               '{ num_output: 6 kernel_size: 3 pad: 1 group: 2 stride: 2 } }', 'opencv'),
    'ip_axis2': ('layer { name: "l" type: "InnerProduct" bottom: "data" top: "y" '
                 'inner_product_param { num_output: 5 axis: 2 } }', 'opencv'),
    'ip_transpose': ('layer { name: "l" type: "InnerProduct" bottom: "data" top: "y" '
                     'inner_product_param { num_output: 5 transpose: true } }', 'numpy'),
    'neurons': ("""layer { name: "a" type: "Sigmoid" bottom: "data" top: "a" }
        layer { name: "b" type: "TanH" bottom: "a" top: "b" }
        layer { name: "c" type: "AbsVal" bottom: "data" top: "c" }
        layer { name: "d" type: "BNLL" bottom: "data" top: "d" }
        layer { name: "e" type: "ELU" bottom: "data" top: "e" elu_param { alpha: 0.7 } }
        layer { name: "f" type: "PReLU" bottom: "data" top: "f" }
        layer { name: "g" type: "PReLU" bottom: "data" top: "g" prelu_param { channel_shared: true } }
        layer { name: "h" type: "Swish" bottom: "data" top: "h" swish_param { beta: 1.5 } }
        layer { name: "i" type: "Power" bottom: "data" top: "i" power_param { power: 2 scale: 0.5 shift: 1.5 } }
        layer { name: "j" type: "Exp" bottom: "data" top: "j" exp_param { base: 2 scale: 0.5 shift: 0.3 } }
        layer { name: "k" type: "Log" bottom: "c" top: "k" log_param { base: 10 scale: 2 shift: 1 } }
        layer { name: "m" type: "ReLU" bottom: "data" top: "m" relu_param { negative_slope: 0.2 } }""", 'opencv'),
    'clip_threshold': ("""layer { name: "a" type: "Clip" bottom: "data" top: "a" clip_param { min: -0.5 max: 0.7 } }
        layer { name: "b" type: "Threshold" bottom: "data" top: "b" threshold_param { threshold: 0.2 } }""",
                       'numpy'),
    'lrn': ("""layer { name: "a" type: "LRN" bottom: "data" top: "a" lrn_param { local_size: 3 alpha: 0.5 beta: 0.6 k: 2 } }
        layer { name: "b" type: "LRN" bottom: "data" top: "b"
                lrn_param { local_size: 3 alpha: 0.5 beta: 0.6 norm_region: WITHIN_CHANNEL } }""", 'opencv'),
    'eltwise_softmax_concat': ("""layer { name: "a" type: "TanH" bottom: "data" top: "a" }
        layer { name: "b" type: "Sigmoid" bottom: "data" top: "b" }
        layer { name: "p" type: "Eltwise" bottom: "data" bottom: "a" bottom: "b" top: "p" eltwise_param { operation: PROD } }
        layer { name: "m" type: "Eltwise" bottom: "data" bottom: "a" bottom: "b" top: "m" eltwise_param { operation: MAX } }
        layer { name: "s" type: "Eltwise" bottom: "p" bottom: "m" bottom: "b" top: "s"
                eltwise_param { coeff: 0.5 coeff: -1 coeff: 2 } }
        layer { name: "c" type: "Concat" bottom: "s" bottom: "a" top: "c" concat_param { axis: 2 } }
        layer { name: "y" type: "Softmax" bottom: "c" top: "y" softmax_param { axis: 2 } }""", 'opencv'),
    'crop_flatten_reshape': ("""layer { name: "s" type: "Pooling" bottom: "data" top: "s" pooling_param { kernel_size: 2 stride: 2 } }
        layer { name: "c" type: "Crop" bottom: "data" bottom: "s" top: "c" crop_param { axis: 2 offset: 1 offset: 2 } }
        layer { name: "f" type: "Flatten" bottom: "c" top: "f" flatten_param { axis: 1 end_axis: 2 } }
        layer { name: "r" type: "Reshape" bottom: "f" top: "r" reshape_param { shape { dim: 0 dim: 2 dim: -1 dim: 3 } } }
        layer { name: "g" type: "Flatten" bottom: "r" top: "g" }""", 'opencv'),
    'argmax': ("""layer { name: "a" type: "ArgMax" bottom: "data" top: "a" }
        layer { name: "b" type: "ArgMax" bottom: "data" top: "b" argmax_param { axis: 1 } }""", 'opencv'),
    'argmax_values_topk': ("""layer { name: "a" type: "ArgMax" bottom: "data" top: "a" argmax_param { out_max_val: true } }
        layer { name: "b" type: "ArgMax" bottom: "data" top: "b" argmax_param { top_k: 3 out_max_val: true } }
        layer { name: "c" type: "ArgMax" bottom: "data" top: "c" argmax_param { top_k: 2 axis: 2 } }
        layer { name: "d" type: "ArgMax" bottom: "data" top: "d" argmax_param { out_max_val: true axis: -1 } }""",
                           'numpy'),
    'slice': ('layer { name: "l" type: "Slice" bottom: "data" top: "y1" top: "y2" top: "y3" '
              'slice_param { axis: 1 slice_point: 1 slice_point: 3 } }', 'numpy'),
    'scale_bias_batchnorm': ("""layer { name: "a" type: "Scale" bottom: "data" top: "a"
                scale_param { bias_term: true axis: 1 num_axes: 2 } }
        layer { name: "b" type: "Bias" bottom: "a" top: "b" }
        layer { name: "c" type: "BatchNorm" bottom: "b" top: "c" }""", 'opencv'),
    'reductions_mvn_tile': ("""layer { name: "a" type: "Reduction" bottom: "data" top: "a" reduction_param { axis: 1 coeff: 2 } }
        layer { name: "b" type: "Reduction" bottom: "data" top: "b" reduction_param { operation: ASUM axis: 2 } }
        layer { name: "c" type: "Reduction" bottom: "data" top: "c" reduction_param { operation: SUMSQ axis: 1 } }
        layer { name: "d" type: "Reduction" bottom: "data" top: "d" reduction_param { operation: MEAN axis: 2 } }
        layer { name: "e" type: "MVN" bottom: "data" top: "e" }
        layer { name: "f" type: "MVN" bottom: "data" top: "f" mvn_param { across_channels: true } }
        layer { name: "g" type: "MVN" bottom: "data" top: "g" mvn_param { normalize_variance: false } }
        layer { name: "h" type: "Tile" bottom: "data" top: "h" tile_param { axis: 2 tiles: 3 } }""", 'numpy'),
    'scale_by_bottom_embed_reindex': ("""layer { name: "p" type: "Pooling" bottom: "data" top: "p" pooling_param { global_pooling: true } }
        layer { name: "f" type: "Flatten" bottom: "p" top: "f" }
        layer { name: "s" type: "Scale" bottom: "data" bottom: "f" top: "s" scale_param { axis: 0 } }
        layer { name: "i" type: "Parameter" top: "i" parameter_param { shape { dim: 3 } } }
        layer { name: "e" type: "Embed" bottom: "i" top: "e" embed_param { num_output: 4 input_dim: 5 } }
        layer { name: "r" type: "Parameter" top: "r" parameter_param { shape { dim: 3 } } }
        layer { name: "x" type: "BatchReindex" bottom: "data" bottom: "r" top: "x" }""", 'numpy'),
}


def integer_parameters(net_path, weights_path):
    """Parameter layers 'i' and 'r' as indices (Embed's rows, BatchReindex's items)."""
    net = cortado.Net(str(net_path), str(weights_path), cortado.TEST)
    if 'i' in net.params:
        net.params['i'][0].data[...] = [4, 0, 2]
        net.params['r'][0].data[...] = [1, 0, 1]
        net.save(str(weights_path))


@pytest.mark.parametrize('name', list(ZOO))
def test_layer_zoo(tmp_path, name):
    body, runtime = ZOO[name]
    net = write_text(tmp_path, name + '.prototxt', ZOO_HEAD + body + '\n')
    weights = None
    if cortado.Net(str(net), cortado.TEST).params:
        weights = tmp_path / (name + '.caffemodel')
        random_weights(net, weights, bn_factor=2.5)
        integer_parameters(net, weights)
    onnx_path = tmp_path / (name + '.onnx')
    model = export(net, weights, onnx_path)
    x = np.random.RandomState(4).randn(2, 4, 6, 6).astype(np.float32)
    if runtime == 'opencv':
        compare_with_opencv(net, weights, onnx_path, {'data': x})
        return
    expected = cortado_forward(net, weights, {'data': x})
    actual = numpy_forward(model, {'data': x})
    assert set(actual) == set(expected)
    for output in expected:
        assert actual[output].shape == expected[output].shape, output
        assert relative_error(actual[output], expected[output]) <= TOLERANCE, output


# ---- refusals --------------------------------------------------------------------------------------

REFUSED = """name: "refused"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 3 dim: 2 dim: 4 } } }
layer { name: "cont" type: "Input" top: "cont" input_param { shape { dim: 3 dim: 2 } } }
layer { name: "lstm1" type: "LSTM" bottom: "data" bottom: "cont" top: "lstm1" recurrent_param { num_output: 5 } }
layer { name: "pool" type: "Pooling" bottom: "lstm1" top: "pool" pooling_param { pool: STOCHASTIC kernel_size: 2 } }
layer { name: "im" type: "Im2col" bottom: "pool" top: "im" convolution_param { kernel_size: 1 } }
"""
PYTHON = """name: "python"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 2 } } }
layer { name: "py" type: "Python" bottom: "data" top: "py" python_param { module: "nowhere" layer: "Nothing" } }
"""


def one_line_error(result):
    assert result.returncode == 1, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith('export_onnx: error: ')
    return lines[0]


def test_refusals_are_one_line(tmp_path):
    net = write_text(tmp_path, 'refused.prototxt', REFUSED)
    out = tmp_path / 'refused.onnx'
    line = one_line_error(run_export(net, None, out))
    assert '3 layers cannot be expressed in ONNX' in line
    assert "'lstm1' (LSTM): " in line and "'pool' (Pooling): STOCHASTIC" in line and "'im' (Im2col): " in line
    assert not out.exists()
    # A Python layer (its code cannot be in an ONNX graph; a build without Python refuses it on reading).
    line = one_line_error(run_export(write_text(tmp_path, 'python.prototxt', PYTHON), None, out))
    assert 'py' in line and 'Python' in line
    # Weights that do not fit the net: the loader's error, naming the layer.
    lenet = REPO / 'models/mnist/lenet.prototxt'
    weights = tmp_path / 'cifar.caffemodel'
    cifar = REPO / 'models/cifar10/cifar10_quick.prototxt'
    random_weights(cifar, weights)
    line = one_line_error(run_export(lenet, weights, out))
    assert 'conv1' in line
    # A ceil-mode window wholly past the image: Caffe pools it to 0, ONNX cannot.
    empty = write_text(tmp_path, 'empty.prototxt', POOLING % dict(pool='MAX', h=6, w=6, k=2, s=3, p=0, extra=''))
    line = one_line_error(run_export(empty, None, out))
    assert "1 layer cannot be expressed in ONNX: 'pool' (Pooling): its last window" in line
    # A shape for a top no data layer has.
    line = one_line_error(run_export(lenet, None, out, '--input_shape=label:1'))
    assert "'label'" in line
    assert not out.exists()
