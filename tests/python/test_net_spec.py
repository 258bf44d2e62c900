"""Tests of cortado.net_spec (pycaffe's net_spec): the layers/params
pseudo-modules, NetSpec naming (named and automatic), in-place layers, ntop,
param lists, top-less layers, the TypeError on non-Top inputs, and that the
generated prototxt parses back into the same NetParameter as a hand-built one.

Pure Python: needs the cortado package with its generated proto module, not
the C++ binding.  Run with
    PYTHONPATH=<dir holding cortado> python3 -m pytest tests/python
"""

import pytest
from google.protobuf import text_format

import cortado as caffe
from cortado import layers as L, params as P
from cortado import net_spec
from cortado.proto import caffe_pb2


# --- the nets of Caffe's own test_net_spec.py ------------------------------

def lenet(batch_size):
    n = caffe.NetSpec()
    n.data, n.label = L.DummyData(shape=[dict(dim=[batch_size, 1, 28, 28]),
                                         dict(dim=[batch_size, 1, 1, 1])],
                                  transform_param=dict(scale=1. / 255),
                                  ntop=2)
    n.conv1 = L.Convolution(n.data, kernel_size=5, num_output=20,
                            weight_filler=dict(type='xavier'))
    n.pool1 = L.Pooling(n.conv1, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.conv2 = L.Convolution(n.pool1, kernel_size=5, num_output=50,
                            weight_filler=dict(type='xavier'))
    n.pool2 = L.Pooling(n.conv2, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.ip1 = L.InnerProduct(n.pool2, num_output=500,
                           weight_filler=dict(type='xavier'))
    n.relu1 = L.ReLU(n.ip1, in_place=True)
    n.ip2 = L.InnerProduct(n.relu1, num_output=10,
                           weight_filler=dict(type='xavier'))
    n.loss = L.SoftmaxWithLoss(n.ip2, n.label)
    return n.to_proto()


def anon_lenet(batch_size):
    data, label = L.DummyData(shape=[dict(dim=[batch_size, 1, 28, 28]),
                                     dict(dim=[batch_size, 1, 1, 1])],
                              transform_param=dict(scale=1. / 255), ntop=2)
    conv1 = L.Convolution(data, kernel_size=5, num_output=20,
                          weight_filler=dict(type='xavier'))
    pool1 = L.Pooling(conv1, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    conv2 = L.Convolution(pool1, kernel_size=5, num_output=50,
                          weight_filler=dict(type='xavier'))
    pool2 = L.Pooling(conv2, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    ip1 = L.InnerProduct(pool2, num_output=500,
                         weight_filler=dict(type='xavier'))
    relu1 = L.ReLU(ip1, in_place=True)
    ip2 = L.InnerProduct(relu1, num_output=10,
                         weight_filler=dict(type='xavier'))
    loss = L.SoftmaxWithLoss(ip2, label)
    return loss.to_proto()


def silent_net():
    n = caffe.NetSpec()
    n.data, n.data2 = L.DummyData(shape=dict(dim=3), ntop=2)
    n.silence_data = L.Silence(n.data, ntop=0)
    n.silence_data2 = L.Silence(n.data2, ntop=0)
    return n.to_proto()


def summary(net):
    return [(l.name, l.type, list(l.bottom), list(l.top)) for l in net.layer]


LENET_SUMMARY = [
    ('data', 'DummyData', [], ['data', 'label']),
    ('conv1', 'Convolution', ['data'], ['conv1']),
    ('pool1', 'Pooling', ['conv1'], ['pool1']),
    ('conv2', 'Convolution', ['pool1'], ['conv2']),
    ('pool2', 'Pooling', ['conv2'], ['pool2']),
    ('ip1', 'InnerProduct', ['pool2'], ['ip1']),
    ('relu1', 'ReLU', ['ip1'], ['ip1']),
    ('ip2', 'InnerProduct', ['ip1'], ['ip2']),
    ('loss', 'SoftmaxWithLoss', ['ip2', 'label'], ['loss']),
]

ANON_LENET_SUMMARY = [
    ('DummyData1', 'DummyData', [], ['DummyData1', 'DummyData2']),
    ('Convolution1', 'Convolution', ['DummyData1'], ['Convolution1']),
    ('Pooling1', 'Pooling', ['Convolution1'], ['Pooling1']),
    ('Convolution2', 'Convolution', ['Pooling1'], ['Convolution2']),
    ('Pooling2', 'Pooling', ['Convolution2'], ['Pooling2']),
    ('InnerProduct1', 'InnerProduct', ['Pooling2'], ['InnerProduct1']),
    ('ReLU1', 'ReLU', ['InnerProduct1'], ['InnerProduct1']),
    ('InnerProduct2', 'InnerProduct', ['InnerProduct1'], ['InnerProduct2']),
    ('SoftmaxWithLoss1', 'SoftmaxWithLoss', ['InnerProduct2', 'DummyData2'],
     ['SoftmaxWithLoss1']),
]


def hand_built_lenet(batch_size):
    """LeNet of lenet() written out field by field."""
    net = caffe_pb2.NetParameter()

    data = net.layer.add()
    data.name = 'data'
    data.type = 'DummyData'
    data.top.extend(['data', 'label'])
    data.transform_param.scale = 1. / 255
    data.dummy_data_param.shape.add().dim.extend([batch_size, 1, 28, 28])
    data.dummy_data_param.shape.add().dim.extend([batch_size, 1, 1, 1])

    def conv(name, bottom, num_output):
        layer = net.layer.add()
        layer.name = name
        layer.type = 'Convolution'
        layer.bottom.append(bottom)
        layer.top.append(name)
        layer.convolution_param.kernel_size.append(5)
        layer.convolution_param.num_output = num_output
        layer.convolution_param.weight_filler.type = 'xavier'

    def pool(name, bottom):
        layer = net.layer.add()
        layer.name = name
        layer.type = 'Pooling'
        layer.bottom.append(bottom)
        layer.top.append(name)
        layer.pooling_param.kernel_size = 2
        layer.pooling_param.stride = 2
        layer.pooling_param.pool = caffe_pb2.PoolingParameter.MAX

    def ip(name, bottom, num_output):
        layer = net.layer.add()
        layer.name = name
        layer.type = 'InnerProduct'
        layer.bottom.append(bottom)
        layer.top.append(name)
        layer.inner_product_param.num_output = num_output
        layer.inner_product_param.weight_filler.type = 'xavier'

    conv('conv1', 'data', 20)
    pool('pool1', 'conv1')
    conv('conv2', 'pool1', 50)
    pool('pool2', 'conv2')
    ip('ip1', 'pool2', 500)
    relu = net.layer.add()
    relu.name = 'relu1'
    relu.type = 'ReLU'
    relu.bottom.append('ip1')
    relu.top.append('ip1')
    ip('ip2', 'ip1', 10)
    loss = net.layer.add()
    loss.name = 'loss'
    loss.type = 'SoftmaxWithLoss'
    loss.bottom.extend(['ip2', 'label'])
    loss.top.append('loss')
    return net


# --- Caffe's assertions (test_lenet, test_zero_tops, test_type_error) -------

def test_lenet():
    """Construct the Caffe version of LeNet with named tops."""
    net = lenet(50)
    assert isinstance(net, caffe_pb2.NetParameter)
    # check that all layers are present
    assert len(net.layer) == 9
    # check that relu is in-place
    assert net.layer[6].bottom == net.layer[6].top
    assert summary(net) == LENET_SUMMARY


def test_anon_lenet():
    """The version with automatically generated layer and blob names."""
    net = anon_lenet(50)
    assert len(net.layer) == 9
    assert net.layer[6].bottom == net.layer[6].top
    assert summary(net) == ANON_LENET_SUMMARY
    # same layers and parameters as the named version, only names differ
    named = lenet(50)
    for anon_layer, named_layer in zip(net.layer, named.layer):
        for layer in (anon_layer, named_layer):
            layer.ClearField('name')
            layer.ClearField('bottom')
            layer.ClearField('top')
        assert anon_layer == named_layer


def test_zero_tops():
    """Net construction for top-less layers."""
    net = silent_net()
    assert summary(net) == [
        ('data', 'DummyData', [], ['data', 'data2']),
        ('silence_data', 'Silence', ['data'], []),
        ('silence_data2', 'Silence', ['data2'], []),
    ]
    assert list(net.layer[0].dummy_data_param.shape[0].dim) == [3]


def test_type_error():
    """A TypeError is raised when a Function input isn't a Top."""
    data = L.DummyData(ntop=2)  # data is a 2-tuple of Tops
    r = r"^Silence input 0 is not a Top \(type is <(type|class) 'tuple'>\)$"
    with pytest.raises(TypeError, match=r):
        L.Silence(data, ntop=0)  # data is a tuple, not a Top
    L.Silence(*data, ntop=0)  # each element of data is a Top


# --- the prototxt -----------------------------------------------------------

def test_lenet_prototxt_round_trip():
    """str(net) is prototxt that parses back to the hand-built NetParameter,
    field by field."""
    text = str(lenet(50))
    assert 'name: "conv1"' in text and 'pool: MAX' in text
    parsed = text_format.Merge(text, caffe_pb2.NetParameter())
    expected = hand_built_lenet(50)
    assert len(parsed.layer) == len(expected.layer)
    for got, want in zip(parsed.layer, expected.layer):
        got_fields = [(f.name, v) for f, v in got.ListFields()]
        want_fields = [(f.name, v) for f, v in want.ListFields()]
        assert got_fields == want_fields, got.name
    assert parsed == expected
    assert parsed.SerializeToString() == expected.SerializeToString()


def test_anon_lenet_prototxt_parses():
    text = str(anon_lenet(8))
    parsed = text_format.Merge(text, caffe_pb2.NetParameter())
    assert parsed == anon_lenet(8)


# --- layer keyword arguments ------------------------------------------------

def test_ntop():
    data = L.DummyData(shape=dict(dim=[1]), ntop=2)
    assert isinstance(data, tuple) and len(data) == 2
    assert all(isinstance(t, net_spec.Top) for t in data)
    assert [t.n for t in data] == [0, 1]
    assert data[0].fn is data[1].fn
    one = L.DummyData(shape=dict(dim=[1]))
    assert isinstance(one, net_spec.Top)
    none = L.Silence(one, ntop=0)
    assert isinstance(none, net_spec.Function)
    assert none.tops == ()
    # ntop / in_place are not layer fields
    assert 'ntop' not in none.params


def test_data_layer_ntop2_and_rules():
    n = caffe.NetSpec()
    n.data, n.label = L.Data(source='mnist_train_lmdb', backend=P.Data.LMDB,
                             batch_size=64, ntop=2,
                             transform_param=dict(scale=0.00390625),
                             include=dict(phase=caffe_pb2.TRAIN))
    layer = n.to_proto().layer[0]
    assert (layer.name, layer.type, list(layer.top)) == \
        ('data', 'Data', ['data', 'label'])
    assert layer.data_param.source == 'mnist_train_lmdb'
    assert layer.data_param.backend == caffe_pb2.DataParameter.LMDB
    assert layer.data_param.batch_size == 64
    assert abs(layer.transform_param.scale - 0.00390625) < 1e-12
    assert len(layer.include) == 1
    assert layer.include[0].phase == caffe_pb2.TRAIN


def test_param_lists():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 3, 8, 8]))
    n.conv = L.Convolution(n.data, num_output=4, kernel_size=3, pad=1,
                           param=[dict(lr_mult=1, decay_mult=1),
                                  dict(lr_mult=2, decay_mult=0)],
                           weight_filler=dict(type='gaussian', std=0.01),
                           bias_filler=dict(type='constant', value=0.1))
    conv = n.to_proto().layer[1]
    assert [(p.lr_mult, p.decay_mult) for p in conv.param] == \
        [(1.0, 1.0), (2.0, 0.0)]
    assert list(conv.convolution_param.kernel_size) == [3]
    assert list(conv.convolution_param.pad) == [1]
    assert conv.convolution_param.weight_filler.type == 'gaussian'
    assert abs(conv.convolution_param.weight_filler.std - 0.01) < 1e-9
    assert abs(conv.convolution_param.bias_filler.value - 0.1) < 1e-7
    data = n.to_proto().layer[0]
    assert list(data.input_param.shape[0].dim) == [1, 3, 8, 8]


def test_generic_param_dicts_and_loss_weight():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[2, 3]))
    n.ip = L.InnerProduct(n.data,
                          inner_product_param=dict(num_output=5,
                                                   bias_term=False),
                          loss_weight=0.5, propagate_down=[True])
    layer = n.to_proto().layer[1]
    assert layer.inner_product_param.num_output == 5
    assert layer.inner_product_param.bias_term is False
    assert list(layer.loss_weight) == [0.5]
    assert list(layer.propagate_down) == [True]


def test_name_override():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 4, 4]))
    n.conv = L.Convolution(n.data, num_output=1, kernel_size=1,
                           name='my_conv')
    layer = n.to_proto().layer[1]
    assert layer.name == 'my_conv'
    assert list(layer.top) == ['conv']


def test_in_place_named_and_chain():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 4]))
    n.ip = L.InnerProduct(n.data, num_output=4)
    n.relu = L.ReLU(n.ip, in_place=True)
    n.drop = L.Dropout(n.relu, dropout_ratio=0.3, in_place=True)
    n.out = L.InnerProduct(n.drop, num_output=2)
    net = n.to_proto()
    assert summary(net) == [
        ('data', 'Input', [], ['data']),
        ('ip', 'InnerProduct', ['data'], ['ip']),
        ('relu', 'ReLU', ['ip'], ['ip']),
        ('drop', 'Dropout', ['ip'], ['ip']),
        ('out', 'InnerProduct', ['ip'], ['out']),
    ]
    assert abs(net.layer[3].dropout_param.dropout_ratio - 0.3) < 1e-7


def test_auto_names_for_unassigned_intermediates():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 8, 8]))
    hidden = L.Convolution(n.data, num_output=2, kernel_size=3)
    hidden2 = L.Convolution(hidden, num_output=2, kernel_size=3)
    n.out = L.Pooling(hidden2, kernel_size=2, stride=2)
    assert summary(n.to_proto()) == [
        ('data', 'Input', [], ['data']),
        ('Convolution1', 'Convolution', ['data'], ['Convolution1']),
        ('Convolution2', 'Convolution', ['Convolution1'], ['Convolution2']),
        ('out', 'Pooling', ['Convolution2'], ['out']),
    ]


def test_to_proto_of_several_tops_shares_ancestors():
    data = L.Input(shape=dict(dim=[1, 4]))
    a = L.InnerProduct(data, num_output=2)
    b = L.InnerProduct(data, num_output=3)
    net = net_spec.to_proto(a, b)
    assert [l.type for l in net.layer] == \
        ['Input', 'InnerProduct', 'InnerProduct']
    assert summary(net)[1][2] == summary(net)[2][2] == ['Input1']
    assert caffe.to_proto is net_spec.to_proto


def test_python_and_deconvolution_params():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 4, 4]))
    n.py = L.Python(n.data, module='my_layers', layer='MyLayer',
                    param_str='{"k": 1}')
    n.up = L.Deconvolution(n.py, num_output=1, kernel_size=4, stride=2,
                           bias_term=False)
    py, up = n.to_proto().layer[1:]
    assert (py.python_param.module, py.python_param.layer,
            py.python_param.param_str) == ('my_layers', 'MyLayer', '{"k": 1}')
    assert up.convolution_param.num_output == 1
    assert list(up.convolution_param.kernel_size) == [4]
    assert list(up.convolution_param.stride) == [2]
    assert up.convolution_param.bias_term is False


def test_unknown_field_raises_attribute_error():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1]))
    n.conv = L.Convolution(n.data, no_such_field=3)
    with pytest.raises(AttributeError, match='no_such_field'):
        n.to_proto()


def test_enum_given_by_name():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 4, 4]))
    n.pool = L.Pooling(n.data, pool='AVE', kernel_size=2)
    assert n.to_proto().layer[1].pooling_param.pool == \
        caffe_pb2.PoolingParameter.AVE
    n.bad = L.Pooling(n.data, pool='MEDIAN', kernel_size=2)
    with pytest.raises(ValueError, match='MEDIAN'):
        n.to_proto()


# --- NetSpec, params, helpers -----------------------------------------------

def test_netspec_item_access():
    n = caffe.NetSpec()
    n['data'] = L.Input(shape=dict(dim=[1]))
    assert n['data'] is n.data
    assert 'data' in n and 'nope' not in n
    assert list(n.tops) == ['data']
    with pytest.raises(AttributeError):
        n.nope
    with pytest.raises(KeyError):
        n['nope']
    assert not hasattr(n, 'nope')


def test_netspec_rejects_unpacked_tuple():
    n = caffe.NetSpec()
    n.both = L.DummyData(shape=dict(dim=[1]), ntop=2)
    with pytest.raises(TypeError, match='both'):
        n.to_proto()


def test_params_enums():
    assert P.Pooling.MAX == caffe_pb2.PoolingParameter.MAX
    assert P.Pooling.AVE == caffe_pb2.PoolingParameter.AVE
    assert P.Pooling.STOCHASTIC == caffe_pb2.PoolingParameter.STOCHASTIC
    assert P.Eltwise.SUM == caffe_pb2.EltwiseParameter.SUM
    assert P.Data.LMDB == caffe_pb2.DataParameter.LMDB
    assert P.Convolution.CUDNN == caffe_pb2.ConvolutionParameter.CUDNN
    with pytest.raises(AttributeError):
        P.Pooling.NO_SUCH_METHOD
    with pytest.raises(AttributeError):
        P.NoSuchLayer.MAX


def test_param_name_dict():
    d = net_spec.param_name_dict()
    assert d['Convolution'] == 'convolution'
    assert d['InnerProduct'] == 'inner_product'
    assert d['Pooling'] == 'pooling'
    assert d['DummyData'] == 'dummy_data'
    assert d['Python'] == 'python'
    assert d['ReLU'] == 'relu'
    assert d['HDF5Data'] == 'hdf5_data'
    for type_name, param in d.items():
        assert param + '_param' in \
            caffe_pb2.LayerParameter.DESCRIPTOR.fields_by_name, type_name


def test_assign_proto():
    layer = caffe_pb2.LayerParameter()
    net_spec.assign_proto(layer, 'name', 'x')
    net_spec.assign_proto(layer, 'top', 'y')  # scalar to repeated -> [y]
    net_spec.assign_proto(layer, 'bottom', ['a', 'b'])
    net_spec.assign_proto(layer, 'param', [dict(lr_mult=0), dict(name='w')])
    net_spec.assign_proto(layer, 'convolution_param',
                          dict(kernel_size=3, weight_filler=dict(std=2)))
    filler = caffe_pb2.FillerParameter(type='msra')
    net_spec.assign_proto(layer.convolution_param, 'bias_filler', filler)
    assert layer.name == 'x'
    assert list(layer.top) == ['y']
    assert list(layer.bottom) == ['a', 'b']
    assert layer.param[0].lr_mult == 0 and layer.param[1].name == 'w'
    assert list(layer.convolution_param.kernel_size) == [3]
    assert layer.convolution_param.weight_filler.std == 2
    assert layer.convolution_param.bias_filler.type == 'msra'
    with pytest.raises(AttributeError):
        net_spec.assign_proto(layer, 'no_such_field', 1)


def test_assign_proto_list_to_singular_field():
    layer = caffe_pb2.LayerParameter()
    with pytest.raises(TypeError, match='not a repeated field'):
        net_spec.assign_proto(layer.pooling_param, 'kernel_size', [2, 2])


def test_netspec_copy():
    import copy
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1]))
    m = copy.copy(n)
    assert m.data is n.data
    assert m.to_proto() == n.to_proto()
