"""test_mnist.py: LeNet on MNIST from Python (needs data/mnist, which scripts/test.sh prepares): a
NetSpec-written LeNet trains to the same weights as models/mnist/lenet_train_test.prototxt, and the
example scripts beside the MNIST nets (classify_digits.py, edit_weights.py: net surgery into a
fully-convolutional LeNet) run on a LeNet trained here from Python."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import cortado as caffe
from cortado import layers as L, params as P
from conftest import LENET_SOLVER, REPO, write_text

MNIST = REPO / 'data' / 'mnist'
pytestmark = pytest.mark.skipif(not (MNIST / 'mnist_train_lmdb' / 'data.mdb').exists(),
                                reason='MNIST is not in data/mnist (scripts/test.sh fetches it)')

def netspec_lenet(source, batch_size):
    """LeNet as pycaffe's LeNet tutorial writes it with NetSpec, layer for layer the prototxt's."""
    n = caffe.NetSpec()
    n.data, n.label = L.Data(batch_size=batch_size, backend=P.Data.LMDB, source=source,
                             transform_param=dict(scale=0.00390625), ntop=2)
    learn = [dict(lr_mult=1), dict(lr_mult=2)]
    xavier, zero = dict(type='xavier'), dict(type='constant')
    n.conv1 = L.Convolution(n.data, num_output=20, kernel_size=5, stride=1, param=learn,
                            weight_filler=xavier, bias_filler=zero)
    n.pool1 = L.Pooling(n.conv1, pool=P.Pooling.MAX, kernel_size=2, stride=2)
    n.conv2 = L.Convolution(n.pool1, num_output=50, kernel_size=5, stride=1, param=learn,
                            weight_filler=xavier, bias_filler=zero)
    n.pool2 = L.Pooling(n.conv2, pool=P.Pooling.MAX, kernel_size=2, stride=2)
    n.ip1 = L.InnerProduct(n.pool2, num_output=500, param=learn, weight_filler=xavier, bias_filler=zero)
    n.relu1 = L.ReLU(n.ip1, in_place=True)
    n.ip2 = L.InnerProduct(n.relu1, num_output=10, param=learn, weight_filler=xavier, bias_filler=zero)
    n.loss = L.SoftmaxWithLoss(n.ip2, n.label)
    return n.to_proto()


def test_netspec_lenet_trains_to_the_prototxt_weights(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # the prototxt's data sources are relative to the repository
    spec_net = write_text(tmp_path, 'lenet_netspec.prototxt',
                          str(netspec_lenet('data/mnist/mnist_train_lmdb', 64)))
    solvers = []
    for name, field, net in (('spec', 'train_net', spec_net),
                             ('prototxt', 'train_net', REPO / 'models/mnist/lenet_train_test.prototxt')):
        path = write_text(tmp_path, f'{name}_solver.prototxt',
                          LENET_SOLVER.format(net_field=field, net=net, max_iter=20, prefix=tmp_path / name))
        solvers.append(caffe.SGDSolver(str(path)))
    spec, reference = solvers
    assert list(spec.net.params) == list(reference.net.params)
    for name in reference.net.params:  # the same draws from the same seed
        for a, b in zip(spec.net.params[name], reference.net.params[name]):
            np.testing.assert_array_equal(a.data, b.data)
    spec.step(20)
    reference.step(20)
    for name in reference.net.params:
        for a, b in zip(spec.net.params[name], reference.net.params[name]):
            assert not np.array_equal(a.data, 0)
            np.testing.assert_allclose(a.data, b.data, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(spec.net.blobs['loss'].data, reference.net.blobs['loss'].data, rtol=1e-6)


@pytest.fixture(scope='module')
def trained_lenet(tmp_path_factory):
    directory = tmp_path_factory.mktemp('lenet')
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        path = write_text(directory, 'solver.prototxt', LENET_SOLVER.format(
            net_field='net', net=REPO / 'models/mnist/lenet_train_test.prototxt', max_iter=300,
            prefix=directory / 'lenet'))
        solver = caffe.SGDSolver(str(path))
        solver.solve()
        assert solver.iter == 300
    finally:
        os.chdir(cwd)
    return directory / 'lenet_iter_300.caffemodel'


def run_example(script, *args):
    return subprocess.run([sys.executable, str(REPO / 'models/mnist' / script), *map(str, args)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def test_classify_digits_example(trained_lenet):
    run = run_example('classify_digits.py', trained_lenet, '--count', 500)
    assert run.returncode == 0, run.stderr[-3000:]
    accuracy = float(re.search(r'accuracy: ([0-9.]+) on 500 test digits', run.stdout).group(1))
    assert accuracy > 0.9, run.stdout
    assert run.stdout.count('predicted') == 10


def test_edit_weights_example_makes_lenet_fully_convolutional(trained_lenet, tmp_path):
    run = run_example('edit_weights.py', trained_lenet, tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert run.stdout.count('same scores') == 4
    # The saved surgery: ip1's weights, now a 500 x 50 x 4 x 4 convolution.
    lenet = caffe.Net(str(REPO / 'models/mnist/lenet.prototxt'), str(trained_lenet), caffe.TEST)
    full = caffe.Net(str(tmp_path / 'lenet_full_conv.prototxt'), str(tmp_path / 'lenet_full_conv.caffemodel'),
                     caffe.TEST)
    assert full.params['ip1-conv'][0].data.shape == (500, 50, 4, 4)
    np.testing.assert_array_equal(full.params['ip1-conv'][0].data.reshape(500, 800),
                                  lenet.params['ip1'][0].data)
    assert full.blobs['prob'].data.shape == (1, 10, 8, 8)
