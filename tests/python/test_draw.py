"""Tests of cortado.draw (pycaffe's draw) and of the python/draw_net.py
command: every net prototxt under models/ draws (as Caffe's test_draw does);
lenet_train_test.prototxt renders to PNG / SVG / dot / raw with the layer
sets of the TRAIN, TEST and ALL phases (checked on the pydot graph); labels,
colours, the lr-multiplier display and include/exclude phase rules; the
command writes the image and exits 0, and exits 1 with a one-line message on
a missing or invalid input.

Pure Python (no C++ binding); needs pydot and graphviz's dot.  Run with
    PYTHONPATH=<dir holding cortado> python3 -m pytest tests/python
"""

import os
import shutil
import subprocess
import sys

import pytest
from google.protobuf import text_format

import cortado.draw
from cortado.proto import caffe_pb2

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
LENET = os.path.join(ROOT, 'models', 'mnist', 'lenet_train_test.prototxt')
DRAW_NET = os.path.join(ROOT, 'python', 'draw_net.py')

needs_dot = pytest.mark.skipif(shutil.which('dot') is None,
                               reason='graphviz dot is not installed')

PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'

LENET_COMMON = {'conv1', 'pool1', 'conv2', 'pool2', 'ip1', 'relu1', 'ip2',
                'loss'}


def load_net(path):
    net = caffe_pb2.NetParameter()
    with open(path) as f:
        text_format.Merge(f.read(), net)
    return net


def net_prototxts():
    """Net prototxts in models/ (solvers excluded)."""
    result = []
    for cwd, _, filenames in os.walk(os.path.join(ROOT, 'models')):
        for filename in sorted(filenames):
            if filename.endswith('.prototxt') and 'solver' not in filename:
                result.append(os.path.join(cwd, filename))
    return sorted(result)


def layer_nodes(graph):
    """{layer name: (type, node)} of the layer nodes of a pydot graph (named
    "<layer> (<type>)")."""
    result = {}
    for node in graph.get_nodes():
        name = node.get_name().strip('"')
        if name.endswith(')') and ' (' in name:
            layer, layer_type = name[:-1].rsplit(' (', 1)
            result[layer] = (layer_type, node)
    return result


def blob_nodes(graph):
    return {node.get_name().strip('"') for node in graph.get_nodes()
            if node.get('shape') == 'octagon'}


def edges(graph):
    return {(e.get_source().strip('"'), e.get_destination().strip('"'))
            for e in graph.get_edges()}


# --- Caffe's test_draw: every net of the tree draws --------------------------

@needs_dot
@pytest.mark.parametrize('path', net_prototxts(),
                         ids=lambda p: os.path.relpath(p, ROOT))
def test_draw_every_model(path):
    net = load_net(path)
    for phase in (None, caffe_pb2.TRAIN, caffe_pb2.TEST):
        dot = cortado.draw.draw_net(net, 'LR', ext='dot', phase=phase)
        assert dot.startswith(b'digraph')


def test_models_exist():
    assert os.path.exists(LENET)
    assert len(net_prototxts()) >= 5


# --- lenet_train_test phases ------------------------------------------------

@pytest.mark.parametrize('phase, expected_layers, batch', [
    (caffe_pb2.TRAIN, LENET_COMMON | {'mnist'}, 64),
    (caffe_pb2.TEST, LENET_COMMON | {'mnist', 'accuracy'}, 100),
    ('TRAIN', LENET_COMMON | {'mnist'}, 64),
    ('TEST', LENET_COMMON | {'mnist', 'accuracy'}, 100),
    (None, LENET_COMMON | {'mnist', 'accuracy'}, None),
    ('ALL', LENET_COMMON | {'mnist', 'accuracy'}, None),
])
def test_lenet_phase_layer_sets(phase, expected_layers, batch):
    net = load_net(LENET)
    graph = cortado.draw.get_pydot_graph(net, 'LR', phase=phase)
    nodes = layer_nodes(graph)
    assert set(nodes) == expected_layers
    assert nodes['conv1'][0] == 'Convolution'
    assert nodes['mnist'][0] == 'Data'
    assert blob_nodes(graph) >= {'data', 'label', 'conv1', 'ip2', 'loss'}
    if 'accuracy' in expected_layers:
        assert 'accuracy' in blob_nodes(graph)
        assert ('ip2', 'accuracy (Accuracy)') in edges(graph)
        assert ('label', 'accuracy (Accuracy)') in edges(graph)
    else:
        assert 'accuracy' not in blob_nodes(graph)
    if batch is not None:
        data_edges = [e for e in graph.get_edges()
                      if e.get_source().strip('"') == 'mnist (Data)']
        assert {e.get('label').strip('"') for e in data_edges} == \
            {'Batch %d' % batch}
    # the graph's edges follow the layers' bottoms and tops
    for layer in net.layer:
        if layer.name not in expected_layers:
            continue
        node = '%s (%s)' % (layer.name, layer.type)
        for bottom in layer.bottom:
            assert (bottom, node) in edges(graph)
        for top in layer.top:
            assert (node, top) in edges(graph)


def test_lenet_graph_styles_and_labels():
    net = load_net(LENET)
    graph = cortado.draw.get_pydot_graph(net, 'LR', phase=caffe_pb2.TRAIN)
    assert graph.get_name().strip('"') == 'LeNet'
    assert graph.get('rankdir') == 'LR'
    nodes = layer_nodes(graph)
    conv1 = nodes['conv1'][1]
    assert conv1.get('fillcolor').strip('"') == '#FF5050'
    assert conv1.get('shape') == 'record'
    label = conv1.get('label')
    assert label.startswith('"') and label.endswith('"')
    assert label.strip('"').split('\\n') == [
        'conv1', '(Convolution)', 'kernel size: 5', 'stride: 1', 'pad: 0']
    pool1 = nodes['pool1'][1]
    assert pool1.get('fillcolor').strip('"') == '#FF9900'
    assert '(Pooling MAX)' in pool1.get('label')
    assert 'stride: 2' in pool1.get('label')
    assert nodes['ip1'][1].get('fillcolor').strip('"') == '#CC33FF'
    # in-place ReLU is drawn as a neuron layer
    assert nodes['relu1'][1].get('fillcolor').strip('"') == '#90EE90'
    # edge labels: num_output of the producing layer
    labels = {(e.get_source().strip('"'), e.get_destination().strip('"')):
              str(e.get('label')).strip('"') for e in graph.get_edges()}
    assert labels[('conv1 (Convolution)', 'conv1')] == '20'
    assert labels[('ip1 (InnerProduct)', 'ip1')] == '500'
    # vertical layouts separate the label's parts with spaces
    tb = cortado.draw.get_layer_label(net.layer[2], 'TB')
    assert tb == '"conv1 (Convolution) kernel size: 5 stride: 1 pad: 0"'


def test_display_lrm():
    net = load_net(LENET)
    conv1 = net.layer[2]
    assert cortado.draw.get_layer_lr_mult(conv1) == (1.0, 2.0)
    assert 'lr mult: 1.0, 2.0' in cortado.draw.get_layer_label(
        conv1, 'LR', display_lrm=True)
    assert 'lr mult' not in cortado.draw.get_layer_label(conv1, 'LR')
    layer = caffe_pb2.LayerParameter(name='ip', type='InnerProduct')
    assert cortado.draw.get_layer_lr_mult(layer) == (1.0, 1.0)
    layer.param.add(lr_mult=0)
    assert cortado.draw.get_layer_lr_mult(layer) == (0.0, 1.0)
    with pytest.raises(ValueError):
        cortado.draw.get_layer_lr_mult(net.layer[3])  # Pooling


def test_phase_rules():
    def layer(**rules):
        l = caffe_pb2.LayerParameter(name='l', type='ReLU')
        for kind, phases in rules.items():
            for p in phases:
                rule = getattr(l, kind).add()
                if p is not None:
                    rule.phase = p
        return l
    TRAIN, TEST = caffe_pb2.TRAIN, caffe_pb2.TEST
    in_phase = cortado.draw.layer_in_phase
    assert in_phase(layer(), TRAIN) and in_phase(layer(), TEST)
    assert in_phase(layer(include=[TRAIN]), TRAIN)
    assert not in_phase(layer(include=[TRAIN]), TEST)
    assert in_phase(layer(include=[TRAIN, TEST]), TEST)
    assert not in_phase(layer(exclude=[TEST]), TEST)
    assert in_phase(layer(exclude=[TEST]), TRAIN)
    # a rule without a phase matches every phase
    assert in_phase(layer(include=[None]), TEST)
    assert not in_phase(layer(exclude=[None]), TRAIN)
    assert in_phase(layer(exclude=[TEST]), None)
    with pytest.raises(ValueError, match='both include and exclude'):
        in_phase(layer(include=[TRAIN], exclude=[TEST]), TRAIN)
    with pytest.raises(ValueError, match='Unknown phase'):
        in_phase(layer(), 'VALIDATE')


def test_awkward_names_are_escaped():
    """Names with record-label and port characters still render."""
    net = caffe_pb2.NetParameter(name='odd "net"')
    l = net.layer.add(name='a:b|{c}<d>', type='Convolution', top=['x:0'])
    l.convolution_param.num_output = 3
    net.layer.add(name='r', type='ReLU', bottom=['x:0'], top=['x:0'])
    graph = cortado.draw.get_pydot_graph(net, 'LR')
    assert set(layer_nodes(graph)) == {'a:b|{c}<d>', 'r'}
    if shutil.which('dot'):
        svg = cortado.draw.draw_net(net, 'TB', ext='svg')
        assert b'<svg' in svg


# --- rendering to files -----------------------------------------------------

@needs_dot
def test_draw_net_to_file_png(tmp_path):
    net = load_net(LENET)
    out = tmp_path / 'lenet.png'
    cortado.draw.draw_net_to_file(net, str(out), 'LR', caffe_pb2.TRAIN)
    data = out.read_bytes()
    assert len(data) > 0
    assert data.startswith(PNG_SIGNATURE)


@needs_dot
@pytest.mark.parametrize('phase, has_accuracy', [
    (caffe_pb2.TRAIN, False), (caffe_pb2.TEST, True), (None, True)])
def test_draw_net_to_file_svg(tmp_path, phase, has_accuracy):
    net = load_net(LENET)
    out = tmp_path / 'lenet.svg'
    cortado.draw.draw_net_to_file(net, str(out), 'TB', phase)
    svg = out.read_text()
    assert '<svg' in svg and '</svg>' in svg
    assert 'conv1' in svg and 'ip2' in svg
    assert ('accuracy' in svg) == has_accuracy


@needs_dot
def test_draw_net_to_file_dot_and_raw(tmp_path):
    net = load_net(LENET)
    dot_out = tmp_path / 'lenet.dot'
    cortado.draw.draw_net_to_file(net, str(dot_out), phase=caffe_pb2.TEST)
    text = dot_out.read_text()
    assert text.startswith('digraph') and 'accuracy' in text
    raw_out = tmp_path / 'lenet.raw'
    cortado.draw.draw_net_to_file(net, str(raw_out), phase=caffe_pb2.TRAIN)
    raw = raw_out.read_text()
    assert raw.startswith('digraph "LeNet"')
    assert 'accuracy' not in raw and '"conv1 (Convolution)"' in raw


def test_draw_net_to_file_bad_extension(tmp_path):
    net = load_net(LENET)
    with pytest.raises(ValueError, match='extension'):
        cortado.draw.draw_net_to_file(net, str(tmp_path / 'lenet'))
    with pytest.raises(ValueError, match='format'):
        cortado.draw.draw_net_to_file(net, str(tmp_path / 'lenet.nope'))
    assert not (tmp_path / 'lenet.nope').exists()


@needs_dot
def test_draw_net_returns_png_bytes():
    png = cortado.draw.draw_net(load_net(LENET), 'BT')
    assert png.startswith(PNG_SIGNATURE)


# --- the draw_net.py command ------------------------------------------------

def run_draw_net(*args):
    return subprocess.run([sys.executable, DRAW_NET] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=dict(os.environ),
                          timeout=120)


@needs_dot
@pytest.mark.parametrize('phase', ['TRAIN', 'TEST', 'ALL'])
def test_command_writes_png(tmp_path, phase):
    out = tmp_path / ('lenet_%s.png' % phase)
    proc = run_draw_net(LENET, str(out), '--rankdir', 'TB', '--phase', phase,
                        '--display_lrm')
    assert proc.returncode == 0, proc.stderr
    assert 'Drawing net to' in proc.stdout
    data = out.read_bytes()
    assert len(data) > 0 and data.startswith(PNG_SIGNATURE)


@needs_dot
def test_command_phase_selects_layers(tmp_path):
    for phase, has_accuracy in (('TRAIN', False), ('TEST', True),
                                ('ALL', True)):
        out = tmp_path / ('lenet_%s.raw' % phase)
        proc = run_draw_net(LENET, str(out), '--phase', phase)
        assert proc.returncode == 0, proc.stderr
        assert ('"accuracy (Accuracy)"' in out.read_text()) == has_accuracy


def test_command_missing_input(tmp_path):
    missing = tmp_path / 'no_such_net.prototxt'
    out = tmp_path / 'out.png'
    proc = run_draw_net(str(missing), str(out))
    assert proc.returncode == 1
    assert 'Traceback' not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert 'no_such_net.prototxt' in lines[0]
    assert 'No such file' in lines[0]
    assert not out.exists()


def test_command_invalid_prototxt(tmp_path):
    bad = tmp_path / 'bad.prototxt'
    bad.write_text('layer { name: "x" bogus_field: 3 }\n')
    proc = run_draw_net(str(bad), str(tmp_path / 'out.png'))
    assert proc.returncode == 1
    assert 'Traceback' not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert 'bad.prototxt' in proc.stderr


def test_command_bad_arguments(tmp_path):
    proc = run_draw_net(LENET, str(tmp_path / 'x.png'), '--phase', 'VAL')
    assert proc.returncode == 2
    assert 'Traceback' not in proc.stderr
    proc = run_draw_net()
    assert proc.returncode == 2
    assert 'usage' in proc.stderr
