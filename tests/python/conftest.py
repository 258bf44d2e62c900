"""conftest.py: what the Python tests share: the package under test (from <build>/python, which CTest
puts on PYTHONPATH), the mode fixture that runs a test on the CPU and, where one is at hand, the GPU,
small nets written as prototxt text, and what Caffe's own tests (test_caffe_<name>.py, vendored
unchanged) need: `import caffe` giving this package, and their own module under Caffe's file name
(test_<name>), where their nets' python_param finds their layers."""
import os
import pathlib
import sys
import textwrap

import pytest

import cortado

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get('CORTADO_BUILD_DIR', REPO / 'build'))


def _gpu_present():
    if not cortado.has_gpu():
        return False
    cortado.set_mode_gpu()
    try:
        cortado.Net(str(write_text(pathlib.Path('/tmp'), 'cortado_gpu_probe.prototxt', TINY)), cortado.TEST)
        return True
    except cortado.CortadoError:
        return False
    finally:
        cortado.set_mode_cpu()


def write_text(directory, name, text):
    path = pathlib.Path(directory) / name
    path.write_text(textwrap.dedent(text))
    return path


# Input (2x3) -> InnerProduct (4) -> ReLU -> Softmax; differentiable from the input.
TINY = """
name: "tiny"
force_backward: true
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.5 }
                              bias_filler { type: "constant" value: 0.1 } } }
layer { name: "relu" type: "ReLU" bottom: "ip" top: "relu" }
layer { name: "prob" type: "Softmax" bottom: "relu" top: "prob" }
"""

# Caffe's LeNet recipe (models/mnist/lenet_solver.prototxt) with the net and the run's length to fill in.
LENET_SOLVER = """
{net_field}: "{net}"
base_lr: 0.01
momentum: 0.9
weight_decay: 0.0005
lr_policy: "inv"
gamma: 0.0001
power: 0.75
display: 0
max_iter: {max_iter}
snapshot_prefix: "{prefix}"
random_seed: 7
"""

# DummyData gives x = 1 (2 x 3) and y = 0.5; ip = w.x + b with w = 0.2, b = 0: ip = 0.6, and the
# Euclidean loss (1/2N) sum (ip - y)^2 has gradient 0.1 for every weight and for the bias. A solver's
# net with nothing to read from outside.
KNOWN_GRADIENT = """
name: "known_gradient"
layer { name: "x" type: "DummyData" top: "x" top: "y"
        dummy_data_param { shape { dim: 2 dim: 3 } shape { dim: 2 dim: 1 }
                           data_filler { type: "constant" value: 1 } data_filler { type: "constant" value: 0.5 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "ip"
        inner_product_param { num_output: 1 weight_filler { type: "constant" value: 0.2 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "ip" bottom: "y" top: "loss" }
"""


def known_gradient_solver(tmp_path, extra='', net=KNOWN_GRADIENT, prefix='snap'):
    """tmp_path/solver.prototxt training `net` (tmp_path/net.prototxt): SGD at a fixed rate 0.1, 5
    iterations, snapshots to tmp_path/<prefix>, and the solver fields in `extra`. Returns its path."""
    net_path = write_text(tmp_path, 'net.prototxt', net)
    return str(write_text(tmp_path, 'solver.prototxt', f"""
        net: "{net_path}"
        base_lr: 0.1
        lr_policy: "fixed"
        max_iter: 5
        display: 0
        snapshot_prefix: "{tmp_path}/{prefix}"
        random_seed: 3
        {extra}
        """))


GPU = None


@pytest.fixture(params=['cpu', 'gpu'])
def mode(request):
    """Runs the test on the CPU, then on the GPU (skipped visibly without one)."""
    global GPU
    if request.param == 'gpu':
        if GPU is None:
            GPU = _gpu_present()
        if not GPU:
            pytest.skip('no GPU here')
        cortado.set_mode_gpu()
    else:
        cortado.set_mode_cpu()
    yield request.param
    cortado.set_mode_cpu()


@pytest.fixture
def tiny(tmp_path):
    return str(write_text(tmp_path, 'tiny.prototxt', TINY))


# ---- Caffe's own tests, vendored unchanged as test_caffe_<name>.py ---------------------------------
sys.modules.setdefault('caffe', cortado)  # their `import caffe`
CAFFE_TEST_PREFIX = 'test_caffe_'


@pytest.fixture(autouse=True)
def caffe_test_module(request, monkeypatch):
    """While a vendored Caffe test runs, its module is also test_<name>, its file name in Caffe's tree,
    where the python_param of its nets finds its layers."""
    name = request.module.__name__
    if name.startswith(CAFFE_TEST_PREFIX):
        monkeypatch.setitem(sys.modules, 'test_' + name[len(CAFFE_TEST_PREFIX):], request.module)
