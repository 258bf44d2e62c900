"""test_python_layer.py: layers written in Python (type "Python", python_param): setup, reshape,
forward and backward against numpy and a numerical gradient, learnable blobs (add_blob), param_str
and phase, exceptions carrying the layer's name, a net trained from Python on a Python data layer,
and `trainer train` running the same net with its embedded interpreter."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cortado
from conftest import BUILD, write_text

LAYERS = '''
import json
import numpy as np
import cortado


class Scale(cortado.Layer):
    """y = a * x with a learnable scalar a, its start value from param_str."""
    def setup(self, bottom, top):
        self.add_blob(1)
        self.blobs[0].data[...] = json.loads(self.param_str)["a"]
        self.seen_phase = self.phase

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        top[0].data[...] = self.blobs[0].data[0] * bottom[0].data

    def backward(self, top, propagate_down, bottom):
        self.blobs[0].diff[0] += (top[0].diff * bottom[0].data).sum()
        if propagate_down[0]:
            bottom[0].diff[...] = self.blobs[0].data[0] * top[0].diff


class Broken(cortado.Layer):
    def setup(self, bottom, top):
        pass

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        raise ValueError("boom")


class Points(cortado.Layer):
    """A data layer: two Gaussian clouds around (+1, +1) and (-1, -1), labels 1 and 0."""
    def setup(self, bottom, top):
        self.batch = json.loads(self.param_str)["batch"]
        self.rng = np.random.RandomState(0)

    def reshape(self, bottom, top):
        top[0].reshape(self.batch, 2)
        top[1].reshape(self.batch)

    def forward(self, bottom, top):
        labels = self.rng.randint(0, 2, self.batch)
        top[0].data[...] = (2 * labels - 1)[:, None] + 0.3 * self.rng.randn(self.batch, 2)
        top[1].data[...] = labels

    def backward(self, top, propagate_down, bottom):
        pass
'''

SCALE_NET = """
name: "python_scale"
force_backward: true
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 } } }
layer { name: "scale" type: "Python" bottom: "data" top: "scaled"
        python_param { module: "pylayers" layer: "Scale" param_str: '{"a": 3.0}' } }
layer { name: "ip" type: "InnerProduct" bottom: "scaled" top: "ip"
        inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 1 } } }
"""

POINTS_NET = """
name: "points"
layer { name: "points" type: "Python" top: "data" top: "label"
        python_param { module: "pylayers" layer: "Points" param_str: '{"batch": 32}' } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
layer { name: "accuracy" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy" }
"""


@pytest.fixture
def layers_dir(tmp_path, monkeypatch):
    write_text(tmp_path, 'pylayers.py', LAYERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop('pylayers', None)
    return tmp_path


def test_forward_backward_against_numpy(layers_dir, mode):
    net = cortado.Net(str(write_text(layers_dir, 'scale.prototxt', SCALE_NET)), cortado.TRAIN)
    layer = net.layer_dict['scale']
    assert layer.type == 'Python' and layer.param_str == '{"a": 3.0}'
    assert layer.seen_phase == cortado.TRAIN and layer.phase == cortado.TRAIN
    assert list(net.params) == ['scale', 'ip']
    np.testing.assert_array_equal(net.params['scale'][0].data, [3.0])  # written in setup
    x = np.random.RandomState(0).randn(2, 3).astype(np.float32)
    net.forward(data=x)
    np.testing.assert_allclose(net.blobs['scaled'].data, 3 * x, rtol=1e-6)
    w = net.params['ip'][0].data
    np.testing.assert_allclose(net.blobs['ip'].data, 3 * x @ w.T + net.params['ip'][1].data, rtol=1e-5, atol=1e-5)
    net.clear_param_diffs()
    top_diff = np.ones((2, 2), np.float32)
    diffs = net.backward(ip=top_diff)
    d_scaled = top_diff @ w
    np.testing.assert_allclose(diffs['data'], 3 * d_scaled, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(net.params['scale'][0].diff, [(d_scaled * x).sum()], rtol=1e-4)


def test_numerical_gradient_through_a_python_layer(layers_dir):
    net = cortado.Net(str(write_text(layers_dir, 'scale.prototxt', SCALE_NET)), cortado.TRAIN)
    x = np.random.RandomState(1).randn(2, 3).astype(np.float64)

    def loss(a):
        net.params['scale'][0].data[...] = a
        net.forward(data=x.astype(np.float32))
        return float((net.blobs['ip'].data ** 2).sum() / 2)

    a, eps = 1.5, 1e-2
    numeric = (loss(a + eps) - loss(a - eps)) / (2 * eps)
    loss(a)
    net.clear_param_diffs()
    net.backward(ip=net.blobs['ip'].data.copy())
    np.testing.assert_allclose(net.params['scale'][0].diff[0], numeric, rtol=1e-3)


def test_exception_names_the_layer(layers_dir, mode):
    text = SCALE_NET.replace('layer: "Scale"', 'layer: "Broken"')
    net = cortado.Net(str(write_text(layers_dir, 'broken.prototxt', text)), cortado.TEST)
    with pytest.raises(ValueError, match=r'scale.*boom') as info:
        net.forward()
    assert isinstance(info.value.__cause__, ValueError)
    missing = SCALE_NET.replace('module: "pylayers"', 'module: "no_such_module"')
    with pytest.raises(ImportError, match='scale'):
        cortado.Net(str(write_text(layers_dir, 'missing.prototxt', missing)), cortado.TEST)


def points_solver(directory, max_iter, display):
    """A solver file training POINTS_NET, written into `directory`."""
    net_path = write_text(directory, 'points.prototxt', POINTS_NET)
    return str(write_text(directory, 'solver.prototxt', f"""
        net: "{net_path}"
        base_lr: 0.1
        momentum: 0.9
        lr_policy: "fixed"
        max_iter: {max_iter}
        display: {display}
        snapshot_prefix: "{directory}/points"
        random_seed: 1
        """))


def test_train_from_python_with_a_python_data_layer(layers_dir, mode):
    solver_path = points_solver(layers_dir, 100, 0)
    solver = cortado.SGDSolver(solver_path)
    solver.net.forward()
    first_loss = float(solver.net.blobs['loss'].data)
    solver.step(60)
    accuracies = []
    for _ in range(5):
        solver.net.forward()
        accuracies.append(float(solver.net.blobs['accuracy'].data))
    assert float(solver.net.blobs['loss'].data) < first_loss / 4
    assert np.mean(accuracies) > 0.95
    # The learnt direction separates the clouds: w[1] - w[0] points along (1, 1).
    w = solver.net.params['ip'][0].data
    assert (w[1] - w[0]).min() > 0


def test_trainer_runs_python_layers(layers_dir):
    trainer = BUILD / 'tools' / 'trainer'
    solver_path = points_solver(layers_dir, 60, 20)
    env = dict(os.environ, PYTHONPATH=str(layers_dir))  # the trainer finds its own cortado package
    run = subprocess.run([str(trainer), 'train', f'--solver={solver_path}'], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    losses = [float(line.rsplit('=', 1)[1].split()[0]) for line in run.stderr.splitlines()
              if ', loss = ' in line]
    assert len(losses) >= 3 and losses[-1] < losses[0] / 4
    assert (layers_dir / 'points_iter_60.caffemodel').exists()
    # A Python exception ends the trainer with one line naming the layer.
    broken = str(write_text(layers_dir, 'broken.prototxt', SCALE_NET.replace('layer: "Scale"', 'layer: "Broken"')))
    run = subprocess.run([str(trainer), 'time', f'--model={broken}', '--iterations=1'],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1
    error_lines = [line for line in run.stderr.splitlines() if 'error' in line]
    assert any('scale' in line and 'boom' in line for line in error_lines), run.stderr[-2000:]
    assert 'Traceback' not in run.stderr
