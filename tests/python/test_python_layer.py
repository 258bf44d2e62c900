"""test_python_layer.py: layers written in Python (type "Python", python_param): setup, reshape,
forward and backward against numpy and a numerical gradient, learnable blobs (self.blobs.add_blob,
self.add_blob), param_str and phase, exceptions carrying the layer's name, a net trained from Python
on a Python data layer, `trainer train` running the same net with its embedded interpreter, and
`mpirun -np 2 trainer train` training a learnable Python layer on two ranks, each reading its own
block of every batch through solver_rank()."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import cortado
from cortado.proto import caffe_pb2
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


class LoggedScale(Scale):
    """Scale, writing the a each forward ran with to <log>_rank<solver_rank()>.txt; with "fail_on_rank",
    raising at that rank's third forward."""
    def forward(self, bottom, top):
        settings = json.loads(self.param_str)
        self.steps = getattr(self, "steps", 0) + 1
        if cortado.solver_rank() == settings.get("fail_on_rank") and self.steps == 3:
            raise ValueError("boom on rank %d" % cortado.solver_rank())
        Scale.forward(self, bottom, top)
        with open("%s_rank%d.txt" % (settings["log"], cortado.solver_rank()), "a") as log:
            log.write("%r\\n" % float(self.blobs[0].data[0]))


class TwoBlobs(cortado.Layer):
    """The identity, with two learnable blobs made as pycaffe layers make them: self.blobs.add_blob."""
    def setup(self, bottom, top):
        blobs = self.blobs
        blobs.add_blob(2, 3)
        self.blobs.add_blob((4,))
        assert len(blobs) == len(self.blobs) == 2 and blobs[-1].shape == (4,)
        self.blobs[1].data[...] = [1, 2, 3, 4]

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        top[0].data[...] = bottom[0].data


class AddsBlobs(TwoBlobs):
    """add_blob(*shape) with the shape from param_str in setup, and add_blob(1) in forward."""
    def setup(self, bottom, top):
        self.blobs.add_blob(*json.loads(self.param_str)["shape"])

    def forward(self, bottom, top):
        self.blobs.add_blob(1)


class Rows(cortado.Layer):
    """A data layer over 32 fixed rows x (2 values) and y = 2 x0 - x1 + 0.5. Rank r of n reads rows
    [(s n + r) B, (s n + r + 1) B) at step s, as the built-in data layers do: n ranks of batch B see
    what one process of batch n B sees."""
    def setup(self, bottom, top):
        self.batch = json.loads(self.param_str)["batch"]
        self.x = np.random.RandomState(0).randn(32, 2)
        self.y = self.x @ np.array([2.0, -1.0]) + 0.5
        self.step = 0

    def reshape(self, bottom, top):
        top[0].reshape(self.batch, 2)
        top[1].reshape(self.batch, 1)

    def forward(self, bottom, top):
        start = (self.step * cortado.solver_count() + cortado.solver_rank()) * self.batch
        rows = np.arange(start, start + self.batch) % len(self.x)
        top[0].data[...] = self.x[rows]
        top[1].data[...] = self.y[rows, None]
        self.step += 1

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


def python_layer_net(directory, layer, param_str='{}'):
    """Input (2 x 3) -> the Python layer `layer` of pylayers, named "p"."""
    return str(write_text(directory, layer + '.prototxt', f"""
        layer {{ name: "data" type: "Input" top: "data" input_param {{ shape {{ dim: 2 dim: 3 }} }} }}
        layer {{ name: "p" type: "Python" bottom: "data" top: "out"
                python_param {{ module: "pylayers" layer: "{layer}" param_str: '{param_str}' }} }}
        """))


def test_self_blobs_add_blob_as_in_pycaffe(layers_dir, mode):
    net = cortado.Net(python_layer_net(layers_dir, 'TwoBlobs'), cortado.TRAIN)
    assert [blob.shape for blob in net.params['p']] == [(2, 3), (4,)]
    np.testing.assert_array_equal(net.params['p'][1].data, [1, 2, 3, 4])  # written in setup
    layer = net.layer_dict['p']
    assert len(layer.blobs) == 2 and [blob.shape for blob in layer.blobs[:1]] == [(2, 3)]
    net.params['p'][0].data[...] = 5  # the blobs are the net's parameters
    np.testing.assert_array_equal(layer.blobs[0].data, np.full((2, 3), 5))


def test_add_blob_mistakes_name_the_layer(layers_dir):
    for shape, exception, expected in (
            ([-1], ValueError, "add_blob: dimension 0 must be an integer >= 0, not -1"),
            ([2, 'a'], TypeError, "add_blob: dimension 1 must be an integer >= 0, not 'a'")):
        with pytest.raises(exception) as info:
            cortado.Net(python_layer_net(layers_dir, 'AddsBlobs', json.dumps({'shape': shape})), cortado.TRAIN)
        assert str(info.value) == 'layer p (Python): setup: ' + expected
    net = cortado.Net(python_layer_net(layers_dir, 'AddsBlobs', '{"shape": [3]}'), cortado.TRAIN)
    with pytest.raises(cortado.CortadoError, match="layer p .* forward: add_blob: only a Python layer's setup"):
        net.forward()
    assert [blob.shape for blob in net.params['p']] == [(3,)]
    with pytest.raises(cortado.CortadoError, match="only a Python layer's setup"):
        cortado.Net(python_layer_net(layers_dir, 'TwoBlobs'), cortado.TRAIN).layer_dict['data'].blobs.add_blob(1)


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


def rows_solver(directory, name, batch, max_iter, fail_on_rank=None):
    """A solver file training Rows -> LoggedScale (learnable a) -> InnerProduct -> EuclideanLoss."""
    settings = json.dumps({'a': 0.5, 'log': f'{directory}/{name}_a', 'fail_on_rank': fail_on_rank})
    net_path = write_text(directory, name + '.prototxt', f"""
        name: "{name}"
        layer {{ name: "rows" type: "Python" top: "x" top: "y"
                python_param {{ module: "pylayers" layer: "Rows" param_str: '{{"batch": {batch}}}' }} }}
        layer {{ name: "scale" type: "Python" bottom: "x" top: "sx"
                python_param {{ module: "pylayers" layer: "LoggedScale" param_str: '{settings}' }} }}
        layer {{ name: "ip" type: "InnerProduct" bottom: "sx" top: "ip"
                inner_product_param {{ num_output: 1 weight_filler {{ type: "constant" value: 0.1 }} }} }}
        layer {{ name: "loss" type: "EuclideanLoss" bottom: "ip" bottom: "y" top: "loss" }}
        """)
    return str(write_text(directory, name + '_solver.prototxt', f"""
        net: "{net_path}"
        base_lr: 0.05
        momentum: 0.9
        lr_policy: "fixed"
        max_iter: {max_iter}
        display: 10
        snapshot_prefix: "{directory}/{name}"
        random_seed: 5
        solver_mode: CPU
        """))


def learned(path):
    """{layer: [blob values]} of a .caffemodel."""
    model = caffe_pb2.NetParameter.FromString(path.read_bytes())
    return {layer.name: [np.array(blob.data) for blob in layer.blobs] for layer in model.layer if layer.blobs}


def train(layers_dir, solver, ranks=1):
    """`trainer train --solver=solver`, under `mpirun -np ranks` for more than one rank (skipped
    visibly without mpirun or a trainer built with MPI)."""
    command = [str(BUILD / 'tools' / 'trainer'), 'train', '--solver=' + solver]
    if ranks > 1:
        mpirun = shutil.which('mpirun')
        if mpirun is None:
            pytest.skip('no mpirun here')
        command = [mpirun, '--allow-run-as-root', '--oversubscribe', '-np', str(ranks)] + command
    run = subprocess.run(command, env=dict(os.environ, PYTHONPATH=str(layers_dir)), capture_output=True,
                         text=True, timeout=300)
    if ranks > 1 and run.returncode == 0 and f'Data-parallel training: {ranks} ranks' not in run.stderr:
        pytest.skip('this trainer has no MPI support')
    return run


def test_mpirun_trains_a_python_layer_on_two_ranks(layers_dir):
    """Two ranks of batch 8 (each its own embedded interpreter, reading its own rows through
    solver_rank()) learn the Python layer's a and the weights one process of batch 16 learns, and
    run with the same a at every step."""
    one = train(layers_dir, rows_solver(layers_dir, 'one', 16, 40))
    assert one.returncode == 0, one.stderr[-3000:]
    two = train(layers_dir, rows_solver(layers_dir, 'two', 8, 40), ranks=2)
    assert two.returncode == 0, two.stderr[-3000:]
    assert 'Data-parallel training: 2 ranks (MPI, CPUs), batch 8 per rank, effective batch 16' in two.stderr
    # Both ranks ran every step with the same a: the Python layer's gradient is exchanged too.
    rank0, rank1 = (np.loadtxt(layers_dir / f'two_a_rank{r}.txt') for r in (0, 1))
    assert len(rank0) >= 40 and len(rank0) == len(rank1)
    np.testing.assert_allclose(rank0, rank1, rtol=1e-6)
    assert not np.allclose(rank0[-1], rank0[0])  # a was learned
    np.testing.assert_allclose(rank0, np.loadtxt(layers_dir / 'one_a_rank0.txt'), rtol=1e-4)
    # What rank 0 saved is what the single process learned; the loss fell.
    two_weights = learned(layers_dir / 'two_iter_40.caffemodel')
    one_weights = learned(layers_dir / 'one_iter_40.caffemodel')
    assert list(two_weights) == list(one_weights) == ['scale', 'ip']
    for layer in one_weights:
        for got, expected in zip(two_weights[layer], one_weights[layer]):
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)
    losses = [float(line.rsplit('=', 1)[1].split()[0]) for line in two.stderr.splitlines() if ', loss = ' in line]
    assert len(losses) >= 3 and losses[-1] < losses[0] / 10


def test_mpirun_a_python_error_on_one_rank_ends_the_run_in_one_line(layers_dir):
    run = train(layers_dir, rows_solver(layers_dir, 'failing', 8, 40, fail_on_rank=1), ranks=2)
    assert run.returncode == 1
    errors = [line for line in run.stderr.splitlines() if 'error:' in line]
    assert errors == ['trainer: error: rank 1: %s/failing.prototxt: layer scale (Python): forward: ValueError: '
                      'boom on rank 1' % layers_dir], run.stderr[-3000:]
    assert 'Traceback' not in run.stderr
