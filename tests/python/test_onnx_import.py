"""test_onnx_import.py: import_onnx against PyTorch's exporter and hand-built ONNX models: LeNet-style
nets (x.view(x.size(0), -1), whose Shape/Gather/Unsqueeze/Concat arithmetic is folded, and
torch.flatten; opsets 9, 11 and 13; fixed and symbolic batch), ResNet-18- and ResNet-50-style nets with
trained-looking BatchNorm statistics, and a hand-built graph of the operators those nets do not emit
(LRN, Concat, Split, Softmax, PRelu, LeakyRelu, Clip, padded AveragePool, arithmetic with constants).
cortado.Net must compute PyTorch's outputs within 1e-4 relative (max |a - b| / max |b|), and the weights
must arrive unchanged. Refusals (an operator with no layer, a file that is not ONNX, opset 8) must exit
1 with one line on stderr naming the problem, and write no file."""
import subprocess

import numpy as np
import pytest

import cortado
from conftest import BUILD

if not cortado.has_onnx():
    pytest.skip('this build has no ONNX support (libonnx-dev)', allow_module_level=True)
torch = pytest.importorskip('torch', reason='PyTorch is needed to build the ONNX models')
onnx = pytest.importorskip('onnx', reason='the onnx package is needed to build the ONNX models')
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

nn = torch.nn
F = torch.nn.functional
TOOL = BUILD / 'tools' / 'import_onnx'
TOLERANCE = 1e-4


def rel_err(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


def export(module, x, path, opset=13, dynamic=False, keep_batch_norm=False):
    """Exports in eval mode; keep_batch_norm: without PyTorch folding BatchNorm into the convolutions."""
    module.eval()
    kwargs = {'training': torch.onnx.TrainingMode.PRESERVE} if keep_batch_norm else {}
    if dynamic:
        kwargs['dynamic_axes'] = {'input': {0: 'N'}, 'output': {0: 'N'}}
    with torch.no_grad():
        torch.onnx.export(module, x, str(path), opset_version=opset, input_names=['input'],
                          output_names=['output'], do_constant_folding=True, **kwargs)
    return path


def run_import(onnx_path, tmp_path, batch_size=None):
    """Runs import_onnx; returns (completed process, prototxt path, caffemodel path)."""
    proto, weights = tmp_path / 'net.prototxt', tmp_path / 'net.caffemodel'
    args = [str(TOOL)] + ([f'--batch_size={batch_size}'] if batch_size else []) + [
        str(onnx_path), str(proto), str(weights)]
    return subprocess.run(args, capture_output=True, text=True, timeout=120), proto, weights


def imported_net(onnx_path, tmp_path, batch_size=None):
    done, proto, weights = run_import(onnx_path, tmp_path, batch_size)
    assert done.returncode == 0, done.stderr
    return cortado.Net(str(proto), str(weights), cortado.TEST)


def forward(net, **inputs):
    for name, value in inputs.items():
        net.blobs[name].reshape(*value.shape)
        net.blobs[name].data[...] = value
    net.reshape()
    return {k: v.copy() for k, v in net.forward().items()}


def torch_out(module, x):
    with torch.no_grad():
        return module(torch.from_numpy(x)).numpy()


def randomise_batch_norms(module, generator):
    """Statistics and affine parameters far from the defaults, as after training."""
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=generator) * 0.5)
            m.running_var.copy_(torch.rand(c, generator=generator) * 1.5 + 0.5)
            m.weight.data.copy_(torch.rand(c, generator=generator) + 0.5)
            m.bias.data.copy_(torch.randn(c, generator=generator) * 0.2)


# ---- models -------------------------------------------------------------------------------------------

class LeNet(nn.Module):
    def __init__(self, use_view):
        super().__init__()
        self.use_view = use_view
        self.conv1 = nn.Conv2d(1, 20, 5)
        self.conv2 = nn.Conv2d(20, 50, 5)
        self.fc1 = nn.Linear(50 * 4 * 4, 500)
        self.fc2 = nn.Linear(500, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(self.conv2(x), 2, 2)
        x = x.view(x.size(0), -1) if self.use_view else torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.down = None
        if stride != 1 or cin != planes:
            self.down = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, planes, stride):
        super().__init__()
        out = planes * 4
        self.conv1 = nn.Conv2d(cin, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.down = None
        if stride != 1 or cin != out:
            self.down = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(self, block, layers, width=64, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        stages, cin = [], width
        for i, n in enumerate(layers):
            planes = width * 2 ** i
            for j in range(n):
                stages.append(block(cin, planes, 2 if i > 0 and j == 0 else 1))
                cin = planes * block.expansion
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.pool(self.stages(self.stem(x)))
        return self.fc(x.view(x.size(0), -1))


# ---- PyTorch models -----------------------------------------------------------------------------------

@pytest.mark.parametrize('opset', [9, 11, 13])
@pytest.mark.parametrize('dynamic', [False, True], ids=['fixed', 'dynamic'])
@pytest.mark.parametrize('use_view', [True, False], ids=['view', 'flatten'])
def test_lenet(tmp_path, opset, dynamic, use_view):
    torch.manual_seed(0)
    model = LeNet(use_view)
    batch = 2
    x = np.random.RandomState(opset).randn(batch, 1, 28, 28).astype(np.float32)
    path = export(model, torch.from_numpy(x), tmp_path / 'lenet.onnx', opset, dynamic)
    net = imported_net(path, tmp_path, batch_size=batch if dynamic else None)
    assert net.blobs['input'].data.shape == (batch, 1, 28, 28)
    out = forward(net, input=x)['output']
    assert out.shape == (batch, 10)
    assert rel_err(out, torch_out(model, x)) < TOLERANCE
    # The weights arrive bit for bit, in Caffe's shapes.
    conv = [layer for layer in net.params if net.layer_dict[layer].type == 'Convolution']
    np.testing.assert_array_equal(net.params[conv[0]][0].data, model.conv1.weight.detach().numpy())
    ips = [layer for layer in net.params if net.layer_dict[layer].type == 'InnerProduct']
    w = net.params[ips[0]][0].data
    ref = model.fc1.weight.detach().numpy()
    np.testing.assert_array_equal(w if w.shape == ref.shape else w.T, ref)
    # The batch axis is copied, not fixed, so the net runs at another batch size.
    x1 = x[:1].copy()
    assert rel_err(forward(net, input=x1)['output'], torch_out(model, x1)) < TOLERANCE


def resnet_check(tmp_path, model, size, dynamic, seed, opset=13, keep_batch_norm=True):
    g = torch.Generator().manual_seed(seed)
    randomise_batch_norms(model, g)
    x = np.random.RandomState(seed).randn(2, 3, size, size).astype(np.float32)
    path = export(model, torch.from_numpy(x if not dynamic else x[:1]), tmp_path / 'resnet.onnx', opset, dynamic,
                  keep_batch_norm)
    net = imported_net(path, tmp_path, batch_size=2 if dynamic else None)
    types = [layer.type for layer in net.layers]
    batch_norms = sum(isinstance(m, nn.BatchNorm2d) for m in model.modules()) if keep_batch_norm else 0
    assert types.count('BatchNorm') == types.count('Scale') == batch_norms
    assert 'Pooling' in types and 'Eltwise' in types
    out = forward(net, input=x)['output']
    err = rel_err(out, torch_out(model, x))
    assert err < TOLERANCE, err


def test_resnet18(tmp_path):
    torch.manual_seed(1)
    resnet_check(tmp_path, ResNet(BasicBlock, [2, 2, 2, 2], width=64), 64, dynamic=True, seed=1)


def test_resnet18_folded_batch_norm_opset_9(tmp_path):
    torch.manual_seed(5)
    resnet_check(tmp_path, ResNet(BasicBlock, [2, 2, 2, 2], width=16), 48, dynamic=False, seed=5, opset=9,
                 keep_batch_norm=False)


def test_resnet50(tmp_path):
    torch.manual_seed(2)
    resnet_check(tmp_path, ResNet(Bottleneck, [3, 4, 6, 3], width=16), 64, dynamic=False, seed=2)


class Assorted(nn.Module):
    """Operators the ResNets do not use: ConvTranspose, grouped and dilated Conv, PReLU, ELU, Sigmoid, Tanh,
    Softplus, abs, exp, sqrt, pow, ceil-mode and padded pooling, channel concatenation, a Linear on 4-D."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1)
        self.group = nn.Conv2d(6, 6, 3, padding=2, dilation=2, groups=3)
        self.prelu = nn.PReLU(6)
        self.head = nn.Linear(5, 3)

    def forward(self, x):
        y = self.prelu(self.group(self.up(x)))
        a = torch.sigmoid(y) + torch.tanh(y) * F.elu(y, 0.7)
        b = F.softplus(y) * torch.sqrt(torch.abs(y) + 1) - torch.exp(-torch.abs(y)) + y.pow(2) * 0.1
        c = torch.cat([F.max_pool2d(a, 3, 2, 1, ceil_mode=True), F.avg_pool2d(b, 2, 2, ceil_mode=True)], 1)
        return self.head(c)


@pytest.mark.parametrize('opset', [11, 13])
def test_assorted_pytorch_operators(tmp_path, opset):
    torch.manual_seed(7)
    model = Assorted()
    x = np.random.RandomState(7).randn(2, 4, 5, 5).astype(np.float32)
    path = export(model, torch.from_numpy(x), tmp_path / 'assorted.onnx', opset, dynamic=True)
    net = imported_net(path, tmp_path, batch_size=2)
    types = {layer.type for layer in net.layers}
    assert {'Deconvolution', 'PReLU', 'ELU', 'Sigmoid', 'TanH', 'BNLL', 'AbsVal', 'Exp', 'Power'} <= types
    assert rel_err(forward(net, input=x)['output'], torch_out(model, x)) < TOLERANCE


# ---- a hand-built graph -------------------------------------------------------------------------------

def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def test_hand_built_operators(tmp_path):
    rs = np.random.RandomState(3)
    scale = rs.rand(8, 1, 1).astype(np.float32) + 0.5
    shift = rs.randn(8, 1, 1).astype(np.float32)
    slope = (rs.rand(8, 1, 1) * 0.5).astype(np.float32)
    nodes = [
        helper.make_node('LRN', ['x'], ['lrn'], name='lrn', size=3, alpha=1e-2, beta=0.75, bias=2.0),
        helper.make_node('Mul', ['lrn', 'scale'], ['mul'], name='mul'),
        helper.make_node('Add', ['mul', 'shift'], ['add'], name='add'),
        helper.make_node('PRelu', ['add', 'slope'], ['prelu'], name='prelu'),
        helper.make_node('LeakyRelu', ['x'], ['leaky'], name='leaky', alpha=0.2),
        helper.make_node('Clip', ['leaky', 'lo', 'hi'], ['clip'], name='clip'),
        helper.make_node('Add', ['prelu', 'shift'], ['biased'], name='biased'),
        helper.make_node('Concat', ['biased', 'clip'], ['cat'], name='cat', axis=1),
        helper.make_node('Split', ['cat', 'split'], ['s1', 's2'], name='split', axis=1),
        helper.make_node('AveragePool', ['s1'], ['avg'], name='avg', kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1], count_include_pad=1),
        helper.make_node('Flatten', ['avg'], ['flat'], name='flat', axis=1),
        helper.make_node('Softmax', ['flat'], ['prob'], name='prob', axis=1),
        helper.make_node('Div', ['s2', 'two'], ['half'], name='half'),
        helper.make_node('Sub', ['half', 'quarter'], ['sub'], name='sub'),
        helper.make_node('Softmax', ['sub'], ['chan'], name='chan', axis=1),
    ]
    inits = [const('scale', scale), const('shift', shift), const('slope', slope),
             const('lo', np.float32(-0.5)), const('hi', np.float32(0.7)),
             const('split', np.array([6, 10], np.int64)), const('two', np.float32(2)),
             const('quarter', np.float32(0.25))]
    graph = helper.make_graph(
        nodes, 'hand', [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N', 8, 6, 6])],
        [helper.make_tensor_value_info('prob', TensorProto.FLOAT, ['N', 54]),
         helper.make_tensor_value_info('chan', TensorProto.FLOAT, ['N', 10, 6, 6])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    onnx.checker.check_model(model)
    path = tmp_path / 'hand.onnx'
    onnx.save(model, str(path))
    net = imported_net(path, tmp_path, batch_size=2)
    types = {layer.type for layer in net.layers}
    assert {'LRN', 'Scale', 'Bias', 'PReLU', 'ReLU', 'Clip', 'Concat', 'Slice', 'Pooling', 'Flatten', 'Softmax',
            'Power'} <= types
    # Mul then Add of per-channel constants is one Scale layer with its bias; a lone Add is a Bias.
    assert len(net.params['mul']) == 2 and len(net.params['biased']) == 1

    x = rs.randn(2, 8, 6, 6).astype(np.float32) * 2
    out = forward(net, x=x)
    t = torch.from_numpy(x)
    a = F.local_response_norm(t, 3, alpha=1e-2, beta=0.75, k=2.0) * torch.from_numpy(scale) + torch.from_numpy(shift)
    a = torch.where(a >= 0, a, a * torch.from_numpy(slope)) + torch.from_numpy(shift)
    b = torch.clamp(F.leaky_relu(t, 0.2), -0.5, 0.7)
    cat = torch.cat([a, b], 1)
    s1, s2 = cat[:, :6], cat[:, 6:]
    prob = torch.softmax(F.avg_pool2d(s1, 3, 2, 1, count_include_pad=True).flatten(1), 1)
    chan = torch.softmax(s2 / 2 - 0.25, 1)
    assert rel_err(out['prob'], prob.numpy()) < TOLERANCE
    assert rel_err(out['chan'], chan.numpy()) < TOLERANCE


def test_hand_built_layers_and_weights(tmp_path):
    """Cortado's own BatchNorm form (Div by the scale factor, no Scale when the affine part is the
    identity), a zero Pad folded into the convolution, Gemm with transB = 0, alpha and beta, MatMul + Add,
    Sum: the layers, their blobs, and the values against numpy."""
    rs = np.random.RandomState(6)
    f32 = lambda *shape: rs.randn(*shape).astype(np.float32)  # noqa: E731
    w, b = f32(4, 3, 3, 3), f32(4)
    raw_mean, raw_var, factor = f32(4) * 7, (rs.rand(4).astype(np.float32) + 0.5) * 7, np.float32(7)
    gamma, beta, mean2, var2 = f32(4), f32(4), f32(4), rs.rand(4).astype(np.float32) + 0.5
    gemm_b, gemm_c, mm_w, mm_b = f32(4, 5), f32(5), f32(5, 3), f32(3)
    ones, zeros = np.ones(4, np.float32), np.zeros(4, np.float32)
    nodes = [
        helper.make_node('Pad', ['x', 'pads'], ['padded'], name='pad'),
        helper.make_node('Conv', ['padded', 'w', 'b'], ['conv'], name='conv', kernel_shape=[3, 3]),
        helper.make_node('Div', ['raw_mean', 'factor'], ['mean'], name='div_mean'),
        helper.make_node('Div', ['raw_var', 'factor'], ['var'], name='div_var'),
        helper.make_node('BatchNormalization', ['conv', 'ones', 'zeros', 'mean', 'var'], ['bn'], name='bn',
                         epsilon=1e-3),
        helper.make_node('BatchNormalization', ['bn', 'gamma', 'beta', 'mean2', 'var2'], ['bn2'], name='bn2'),
        helper.make_node('Relu', ['bn2'], ['relu'], name='relu'),
        helper.make_node('GlobalAveragePool', ['relu'], ['gap'], name='gap'),
        helper.make_node('Flatten', ['gap'], ['flat'], name='flat'),
        helper.make_node('Gemm', ['flat', 'gemm_b', 'gemm_c'], ['gemm'], name='gemm', alpha=0.5, beta=2.0),
        helper.make_node('MatMul', ['gemm', 'mm_w'], ['mm'], name='mm'),
        helper.make_node('Add', ['mm', 'mm_b'], ['mm_add'], name='mm_add'),
        helper.make_node('Sum', ['mm_add', 'mm_add'], ['y'], name='sum'),
    ]
    inits = [const('pads', np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)), const('w', w), const('b', b),
             const('raw_mean', raw_mean), const('raw_var', raw_var), const('factor', factor),
             const('ones', ones), const('zeros', zeros), const('gamma', gamma), const('beta', beta),
             const('mean2', mean2), const('var2', var2), const('gemm_b', gemm_b), const('gemm_c', gemm_c),
             const('mm_w', mm_w), const('mm_b', mm_b)]
    graph = helper.make_graph(nodes, 'layers', [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N', 3, 8, 8])],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['N', 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)], producer_name='Cortado')
    path = tmp_path / 'layers.onnx'
    onnx.save(model, str(path))
    net = imported_net(path, tmp_path, batch_size=2)
    types = [layer.type for layer in net.layers]
    assert types.count('BatchNorm') == 2 and types.count('Scale') == 1 and 'Pad' not in types
    assert net.bottom_names['conv'] == ['x']  # the Pad is the convolution's pad
    np.testing.assert_array_equal(net.params['bn'][0].data, raw_mean)
    np.testing.assert_array_equal(net.params['bn'][1].data, raw_var)
    np.testing.assert_array_equal(net.params['bn'][2].data, [factor])
    np.testing.assert_array_equal(net.params['gemm'][0].data, gemm_b * np.float32(0.5))
    np.testing.assert_array_equal(net.params['mm'][0].data, mm_w)
    np.testing.assert_array_equal(net.params['mm'][1].data, mm_b)

    x = f32(2, 3, 8, 8)
    conv = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), padding=1)
    c = conv.numpy()
    ch = lambda v: v.reshape(1, -1, 1, 1)  # noqa: E731
    y = (c - ch(raw_mean / factor)) / np.sqrt(ch(raw_var / factor) + 1e-3)
    y = np.maximum((y - ch(mean2)) / np.sqrt(ch(var2) + 1e-5) * ch(gamma) + ch(beta), 0)
    y = y.mean(axis=(2, 3))
    y = 0.5 * y @ gemm_b + 2 * gemm_c
    y = 2 * (y @ mm_w + mm_b)
    assert rel_err(forward(net, x=x)['y'], y) < TOLERANCE


# ---- refusals -----------------------------------------------------------------------------------------

def expect_refusal(onnx_path, tmp_path, *fragments):
    done, proto, weights = run_import(onnx_path, tmp_path)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith('import_onnx: error: '), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert not proto.exists() and not weights.exists()
    return lines[0]


class Transposer(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return self.conv(x).permute(0, 2, 3, 1)


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(5, 7, batch_first=True)

    def forward(self, x):
        return self.gru(x)[0]


def test_refuses_unsupported_operators(tmp_path):
    torch.manual_seed(4)
    path = export(Transposer(), torch.randn(1, 3, 8, 8), tmp_path / 'transpose.onnx')
    line = expect_refusal(path, tmp_path, '1 node(s) have no Cortado layer', '(Transpose)', 'transpose.onnx')
    assert "node '" in line
    path = export(Recurrent(), torch.randn(1, 4, 5), tmp_path / 'gru.onnx')
    expect_refusal(path, tmp_path, '(GRU)')


def test_refuses_arithmetic_caffe_does_not_share(tmp_path):
    nodes = [helper.make_node('Conv', ['x', 'w'], ['conv'], name='lopsided_conv', kernel_shape=[3, 3],
                              pads=[0, 0, 1, 1]),
             helper.make_node('AveragePool', ['conv'], ['y'], name='avg_excluding_pads', kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1], count_include_pad=0)]
    graph = helper.make_graph(nodes, 'bad', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 2, 6, 6])],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 2, 5, 5])],
                              [const('w', np.ones((2, 2, 3, 3), np.float32))])
    path = tmp_path / 'bad.onnx'
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)]), str(path))
    expect_refusal(path, tmp_path, '2 node(s)', "node 'lopsided_conv' (Conv): asymmetric pads",
                   "node 'avg_excluding_pads' (AveragePool)", 'count_include_pad = 0')


def test_refuses_files_that_are_not_onnx(tmp_path):
    path = tmp_path / 'junk.onnx'
    path.write_bytes(b'\x08\x07this is not a protobuf \xff\xff\xff')
    expect_refusal(path, tmp_path, 'junk.onnx', 'not an ONNX model')
    expect_refusal(tmp_path / 'missing.onnx', tmp_path, 'missing.onnx')


def test_refuses_symbolic_axes_past_the_batch(tmp_path):
    graph = helper.make_graph([helper.make_node('Relu', ['x'], ['y'], name='relu')], 'seq',
                              [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N', 'T', 3])],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['N', 'T', 3])])
    path = tmp_path / 'seq.onnx'
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)]), str(path))
    expect_refusal(path, tmp_path, "input 'x'", 'axis 1', "'T'")


def test_refuses_old_opsets(tmp_path):
    graph = helper.make_graph([helper.make_node('Relu', ['x'], ['y'], name='relu')], 'old',
                              [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 3])],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 3])])
    path = tmp_path / 'old.onnx'
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 8)]), str(path))
    expect_refusal(path, tmp_path, 'opset 8')
