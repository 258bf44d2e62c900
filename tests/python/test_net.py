"""test_net.py: cortado.Net against pycaffe's contract, checked with numpy: construction (phase,
level, stages, weights), blobs and params, forward and backward (start/end, named inputs and diffs),
forward_all, reshape, the arrays' life, weights files, share_with, MemoryData; on the CPU and the GPU."""
import gc

import numpy as np
import pytest

import cortado
from conftest import write_text


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def tiny_forward(net, x):
    w, b = net.params['ip'][0].data, net.params['ip'][1].data
    return softmax(np.maximum(x @ w.T + b, 0))


def test_structure(tiny):
    net = cortado.Net(tiny, cortado.TEST)
    assert list(net.blobs) == ['data', 'ip', 'relu', 'prob']
    assert list(net.params) == ['ip']
    assert [layer.type for layer in net.layers] == ['Input', 'InnerProduct', 'ReLU', 'Softmax']
    assert list(net._layer_names) == ['data', 'ip', 'relu', 'prob']
    assert list(net.layer_dict) == ['data', 'ip', 'relu', 'prob']
    assert net.inputs == ['data'] and net.outputs == ['prob']
    assert net.top_names['ip'] == ['ip'] and net.bottom_names['relu'] == ['ip']
    assert net.bottom_names['data'] == []
    w = net.params['ip'][0]
    assert w.shape == (4, 3) and w.count == 12 and w.num == 4 and w.channels == 3
    assert w.height == 1 and w.width == 1
    assert net.blobs['data'].data.dtype == np.float32
    assert net.blob_loss_weights['prob'] == 0
    np.testing.assert_array_equal(net.layer_dict['ip'].blobs[0].data, w.data)
    np.testing.assert_allclose(net.params['ip'][1].data, 0.1)  # bias_filler


def test_forward_matches_numpy(tiny, mode):
    net = cortado.Net(tiny, cortado.TEST)
    x = np.random.RandomState(0).randn(2, 3).astype(np.float32)
    out = net.forward(data=x)
    assert list(out) == ['prob']
    np.testing.assert_allclose(out['prob'], tiny_forward(net, x), rtol=1e-5, atol=1e-6)
    # The input stays where the script put it, and intermediate blobs are readable.
    np.testing.assert_array_equal(net.blobs['data'].data, x)
    np.testing.assert_allclose(net.blobs['relu'].data,
                               np.maximum(x @ net.params['ip'][0].data.T + 0.1, 0), rtol=1e-5, atol=1e-6)


def test_forward_start_end_and_blobs(tiny, mode):
    net = cortado.Net(tiny, cortado.TEST)
    x = np.random.RandomState(1).randn(2, 3).astype(np.float32)
    net.blobs['data'].data[...] = x
    out = net.forward(end='ip')
    assert set(out) == {'ip'}
    ip = x @ net.params['ip'][0].data.T + net.params['ip'][1].data
    np.testing.assert_allclose(out['ip'], ip, rtol=1e-5, atol=1e-6)
    # Run only the rest, from a hand-written ReLU output.
    net.blobs['relu'].data[...] = np.array([[1, 2, 3, 4], [0, 0, 0, 0]], np.float32)
    out = net.forward(start='prob', blobs=['relu'])
    np.testing.assert_allclose(out['prob'], softmax(np.array([[1, 2, 3, 4], [0, 0, 0, 0]], np.float32)),
                               rtol=1e-5)
    with pytest.raises(TypeError, match="unknown keyword argument 'nope'"):
        net.forward(nope=x)
    with pytest.raises(ValueError, match=r"input 'data' has shape \(2, 3\), not \(3, 3\)"):
        net.forward(data=np.zeros((3, 3), np.float32))


def test_backward_matches_numpy(tiny, mode):
    net = cortado.Net(tiny, cortado.TEST)
    rng = np.random.RandomState(2)
    x = rng.randn(2, 3).astype(np.float32)
    top_diff = rng.randn(2, 4).astype(np.float32)
    net.forward(data=x)
    diffs = net.backward(prob=top_diff)
    assert set(diffs) == {'data'}
    w, b = net.params['ip'][0].data, net.params['ip'][1].data
    ip = x @ w.T + b
    p = softmax(np.maximum(ip, 0))
    d_relu = p * (top_diff - (top_diff * p).sum(axis=1, keepdims=True))
    d_ip = d_relu * (ip > 0)
    np.testing.assert_allclose(diffs['data'], d_ip @ w, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(net.params['ip'][0].diff, d_ip.T @ x, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(net.params['ip'][1].diff, d_ip.sum(axis=0), rtol=1e-4, atol=1e-6)
    # backward from a layer down to another, with a diff asked for by name.
    net.clear_param_diffs()
    assert not net.params['ip'][0].diff.any()
    out = net.backward(start='prob', end='relu', diffs=['ip'])
    assert set(out) == {'ip'}
    np.testing.assert_allclose(out['ip'], d_ip, rtol=1e-4, atol=1e-6)


def test_backward_on_a_test_net_without_force_backward(tmp_path):
    path = write_text(tmp_path, 'n.prototxt', """
        layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 2 } } }
        layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
        """)
    net = cortado.Net(str(path), cortado.TEST)
    net.forward()
    diff = net.blobs['ip'].diff
    assert diff.shape == (1, 2) and not diff.any() and not diff.flags.writeable
    with pytest.raises(cortado.CortadoError, match='force_backward'):
        net.backward()


def test_arrays_are_the_net_memory_and_outlive_it(tiny, mode):
    net = cortado.Net(tiny, cortado.TEST)
    w = net.params['ip'][0].data
    w[...] = 0
    net.params['ip'][1].data[...] = [1, 2, 3, 4]
    out = net.forward(data=np.ones((2, 3), np.float32))['prob']
    np.testing.assert_allclose(out, softmax(np.array([[1, 2, 3, 4]] * 2, np.float32)), rtol=1e-5)
    prob = net.blobs['prob'].data
    expected = prob.copy()
    del net
    gc.collect()
    np.testing.assert_array_equal(prob, expected)  # still readable: the array holds the memory
    assert not w.any()


def test_reshape_replans_and_keeps_weights(tiny, mode):
    net = cortado.Net(tiny, cortado.TEST)
    w = net.params['ip'][0].data  # held across the reshape
    data = net.blobs['data']
    data.reshape(7, 3)  # more than planned
    assert data.shape == (7, 3) and net.blobs['data'].shape == (7, 3)
    net.reshape()
    assert net.blobs['prob'].shape == (7, 4)
    x = np.random.RandomState(3).randn(7, 3).astype(np.float32)
    w[...] = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    out = net.forward(data=x)['prob']
    np.testing.assert_allclose(out, tiny_forward(net, x), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(net.params['ip'][0].data, w)
    # Smaller: reshaped in place.
    net.blobs['data'].reshape(1, 3)
    out = net.forward(data=x[:1])['prob']
    assert out.shape == (1, 4)
    np.testing.assert_allclose(out, tiny_forward(net, x[:1]), rtol=1e-5, atol=1e-6)


def test_forward_all_and_forward_backward_all(tiny, mode):
    net = cortado.Net(tiny, cortado.TEST)
    x = np.random.RandomState(4).randn(5, 3).astype(np.float32)  # batch 2: 3 batches, the last padded
    out = net.forward_all(data=x, blobs=['ip'])
    assert out['prob'].shape == (5, 4) and out['ip'].shape == (5, 4)
    np.testing.assert_allclose(out['prob'], tiny_forward(net, x), rtol=1e-5, atol=1e-6)
    outputs, diffs = net.forward_backward_all(data=x, prob=np.ones((5, 4), np.float32))
    np.testing.assert_allclose(outputs['prob'], tiny_forward(net, x), rtol=1e-5, atol=1e-6)
    # d(sum of softmax)/dx = 0.
    assert diffs['data'].shape == (5, 3)
    np.testing.assert_allclose(diffs['data'], 0, atol=1e-5)


def test_weights_files(tiny, tmp_path, mode):
    net = cortado.Net(tiny, cortado.TEST)
    net.params['ip'][0].data[...] = np.arange(12).reshape(4, 3)
    net.params['ip'][1].data[...] = -1
    path = str(tmp_path / 'tiny.caffemodel')
    net.save(path)
    for loaded in (cortado.Net(tiny, path, cortado.TEST), cortado.Net(tiny, cortado.TEST, weights=path)):
        np.testing.assert_array_equal(loaded.params['ip'][0].data, np.arange(12).reshape(4, 3))
        np.testing.assert_array_equal(loaded.params['ip'][1].data, -1)
    other = cortado.Net(tiny, cortado.TEST)
    other.copy_from(path)
    np.testing.assert_array_equal(other.params['ip'][0].data, net.params['ip'][0].data)
    h5 = str(tmp_path / 'tiny.caffemodel.h5')
    net.params['ip'][1].data[...] = 7
    net.save_hdf5(h5)
    other.load_hdf5(h5)
    np.testing.assert_array_equal(other.params['ip'][1].data, 7)


def test_share_with(tiny, mode):
    a = cortado.Net(tiny, cortado.TEST)
    b = cortado.Net(tiny, cortado.TEST)
    b.share_with(a)
    np.testing.assert_array_equal(b.params['ip'][0].data, a.params['ip'][0].data)
    a.params['ip'][1].data[...] = 3
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(b.forward(data=x)['prob'], tiny_forward(a, x), rtol=1e-5)


def test_phase_level_stages(tmp_path):
    path = str(write_text(tmp_path, 'staged.prototxt', """
        layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 2 } } }
        layer { name: "train_only" type: "ReLU" bottom: "data" top: "a" include { phase: TRAIN } }
        layer { name: "test_only" type: "ReLU" bottom: "data" top: "b" include { phase: TEST } }
        layer { name: "deep" type: "ReLU" bottom: "data" top: "c" include { min_level: 2 } }
        layer { name: "staged" type: "ReLU" bottom: "data" top: "d" include { stage: "deploy" } }
        """))
    assert list(cortado.Net(path, cortado.TRAIN)._layer_names) == ['data', 'train_only']
    assert list(cortado.Net(path, cortado.TEST)._layer_names) == ['data', 'test_only']
    assert 'deep' in cortado.Net(path, cortado.TEST, level=2)._layer_names
    assert 'staged' in cortado.Net(path, cortado.TEST, stages=['deploy'])._layer_names
    assert 'staged' not in cortado.Net(path, phase=cortado.TEST)._layer_names


def test_random_seed_gives_the_same_weights(tiny):
    cortado.set_random_seed(17)
    a = cortado.Net(tiny, cortado.TEST).params['ip'][0].data.copy()
    b = cortado.Net(tiny, cortado.TEST).params['ip'][0].data.copy()
    cortado.set_random_seed(18)
    c = cortado.Net(tiny, cortado.TEST).params['ip'][0].data.copy()
    cortado.set_random_seed(-1)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_session_functions():
    types = cortado.layer_type_list()
    assert types == sorted(types)
    for t in ('Convolution', 'InnerProduct', 'MemoryData', 'Python', 'SoftmaxWithLoss'):
        assert t in types
    assert isinstance(cortado.has_nccl(), bool)
    cortado.set_device(0)
    with pytest.raises(cortado.CortadoError):
        cortado.set_device(-1)
    assert cortado.TRAIN == 0 and cortado.TEST == 1


def test_errors_are_python_exceptions(tmp_path, tiny):
    with pytest.raises(cortado.CortadoError, match='missing.prototxt'):
        cortado.Net(str(tmp_path / 'missing.prototxt'), cortado.TEST)
    bad = write_text(tmp_path, 'bad.prototxt', 'layer { name: "x" type: "Nope" top: "x" }\n')
    with pytest.raises(RuntimeError, match='Nope'):
        cortado.Net(str(bad), cortado.TEST)
    with pytest.raises(ValueError, match='phase'):
        cortado.Net(tiny, 7)
    net = cortado.Net(tiny, cortado.TEST)
    with pytest.raises(cortado.CortadoError, match='planned'):
        net.blobs['ip'].reshape(100, 100)


def test_memory_data_set_input_arrays(tmp_path, mode):
    path = str(write_text(tmp_path, 'memory.prototxt', """
        layer { name: "mem" type: "MemoryData" top: "data" top: "label"
                memory_data_param { batch_size: 2 channels: 1 height: 1 width: 3 } }
        layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
                inner_product_param { num_output: 2 weight_filler { type: "constant" value: 1 } } }
        layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
        """))
    net = cortado.Net(path, cortado.TRAIN)
    data = np.arange(12, dtype=np.float32).reshape(4, 1, 1, 3)
    labels = np.array([0, 1, 1, 0], np.float32)
    net.set_input_arrays(data, labels)
    for batch in (0, 1, 0):  # wraps around after the fourth item
        net.forward()
        np.testing.assert_array_equal(net.blobs['data'].data, data[2 * batch:2 * batch + 2])
        np.testing.assert_array_equal(net.blobs['label'].data.ravel(), labels[2 * batch:2 * batch + 2])
    with pytest.raises(cortado.CortadoError, match='multiple'):
        net.set_input_arrays(data[:3], labels[:3])


def test_a_bf16_net_reads_as_float32(tmp_path, mode):
    """A mixed-precision net (default_forward_type: BFLOAT16): its 16-bit blobs read as read-only
    float32 copies holding bf16 values, and its outputs are the float net's within bf16 rounding."""
    from conftest import TINY
    wide = cortado.Net(str(write_text(tmp_path, 'wide.prototxt', TINY)), cortado.TEST)
    narrow = cortado.Net(str(write_text(tmp_path, 'narrow.prototxt',
                                        'default_forward_type: BFLOAT16 default_backward_type: BFLOAT16\n' + TINY)),
                         cortado.TEST)
    narrow.params['ip'][0].data[...] = wide.params['ip'][0].data
    x = np.random.RandomState(3).randn(2, 3).astype(np.float32)
    expected = wide.forward(data=x)['prob']
    got = narrow.forward(data=x)['prob']
    np.testing.assert_allclose(got, expected, rtol=2e-2, atol=1e-3)
    relu = narrow.blobs['relu'].data
    assert relu.dtype == np.float32 and not relu.flags.writeable
    # bf16 values: the low 16 bits of each float32 are zero.
    assert not np.any(relu.view(np.uint32) & 0xFFFF)
    np.testing.assert_allclose(relu, wide.blobs['relu'].data, rtol=1e-2, atol=1e-2)
