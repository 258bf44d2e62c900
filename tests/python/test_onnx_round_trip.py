"""test_onnx_round_trip.py: the two ONNX directions together, through cortado.onnx.

- Cortado -> ONNX -> Cortado keeps every weight byte for byte (LeNet, cifar10_quick, CaffeNet,
  GoogLeNet and ResNet-50, whose BatchNorm layers have moving-average scale factors other than 1),
  and the re-imported net computes what the original computes.
- A LeNet built in PyTorch, exported with torch.onnx.export and imported, trains with `trainer train`
  on MNIST (Caffe's LeNet recipe, the imported weights as the start) to at least 0.985 test accuracy
  (needs data/mnist, which scripts/test.sh prepares).
"""
import re
import subprocess

import numpy as np
import pytest

import cortado
import cortado.onnx
from cortado.proto import caffe_pb2
from conftest import BUILD, LENET_SOLVER, REPO, write_text
from google.protobuf import text_format

if not cortado.has_onnx():
    pytest.skip('this build has no ONNX support (libonnx-dev)', allow_module_level=True)

MODELS = REPO / 'tests' / 'compat' / 'caffe-models'
NETS = {
    'lenet': REPO / 'models' / 'mnist' / 'lenet.prototxt',
    'cifar10_quick': REPO / 'models' / 'cifar10' / 'cifar10_quick.prototxt',
    'caffenet': MODELS / 'models' / 'bvlc_reference_caffenet' / 'deploy.prototxt',
    'googlenet': MODELS / 'models' / 'bvlc_googlenet' / 'deploy.prototxt',
    'resnet50': MODELS / 'resnet' / 'ResNet-50-deploy.prototxt',
}


def random_weights(net, seed):
    """Weights of a trained net's scale, and BatchNorm statistics with scale factors other than 1."""
    rng = np.random.default_rng(seed)
    for name, blobs in net.params.items():
        layer_type = net.layers[list(net._layer_names).index(name)].type
        if layer_type == 'BatchNorm':
            factor = rng.uniform(0.5, 1000.0)
            blobs[0].data[...] = rng.normal(0, 0.5, blobs[0].data.shape) * factor
            blobs[1].data[...] = rng.uniform(0.5, 2.0, blobs[1].data.shape) * factor
            blobs[2].data[...] = factor
            continue
        for blob in blobs:
            spread = 1.0 / np.sqrt(blob.data[0].size) if blob.data.ndim > 1 else 0.1
            blob.data[...] = rng.normal(0, spread, blob.data.shape)


def read_weights(path):
    param = caffe_pb2.NetParameter()
    param.ParseFromString(path.read_bytes())
    return {layer.name: layer.blobs for layer in param.layer if layer.blobs}


def blob_bytes(blob):
    return tuple(blob.shape.dim), np.asarray(blob.data, dtype=np.float32).tobytes()


@pytest.mark.parametrize('name', list(NETS))
def test_cortado_to_onnx_to_cortado_keeps_every_weight_byte(name, tmp_path):
    cortado.set_mode_cpu()
    net = cortado.Net(str(NETS[name]), cortado.TEST)
    random_weights(net, seed=len(name))
    net.save(str(tmp_path / 'original.caffemodel'))
    cortado.onnx.export(NETS[name], tmp_path / 'original.caffemodel', tmp_path / 'model.onnx')
    batch = net.blobs[net.inputs[0]].data.shape[0]
    cortado.onnx.import_model(tmp_path / 'model.onnx', tmp_path / 'imported.prototxt',
                              tmp_path / 'imported.caffemodel', batch_size=batch)

    original = read_weights(tmp_path / 'original.caffemodel')
    imported = read_weights(tmp_path / 'imported.caffemodel')
    assert set(imported) == set(original), 'the layers with weights differ'
    for layer, blobs in original.items():
        assert [blob_bytes(b) for b in imported[layer]] == [blob_bytes(b) for b in blobs], layer

    # The imported net is the same function: the same input gives the same outputs.
    again = cortado.Net(str(tmp_path / 'imported.prototxt'), str(tmp_path / 'imported.caffemodel'),
                        cortado.TEST)
    net_input, again_input = net.inputs[0], again.inputs[0]
    x = np.random.default_rng(3).uniform(-1, 1, net.blobs[net_input].data.shape).astype(np.float32)
    ours = net.forward(**{net_input: x})
    theirs = again.forward(**{again_input: x})
    assert list(theirs) == list(ours), 'the output names differ'
    for output, values in ours.items():
        scale = np.abs(values).max()
        assert np.abs(theirs[output] - values).max() <= 1e-5 * scale, output


MNIST = REPO / 'data' / 'mnist'

def training_net(imported_prototxt):
    """The imported deploy net with Caffe's MNIST data layers in place of its Input layer and a
    SoftmaxWithLoss and an Accuracy on its output: what a user writes around an imported net."""
    net = caffe_pb2.NetParameter()
    text_format.Parse(imported_prototxt.read_text(), net)
    inputs = [layer for layer in net.layer if layer.type == 'Input']
    assert len(inputs) == 1
    data_top = inputs[0].top[0]
    body = [layer for layer in net.layer if layer.type != 'Input']
    output = body[-1].top[0]
    train = caffe_pb2.NetParameter()
    train.name = net.name
    for phase, source, batch in ((caffe_pb2.TRAIN, 'mnist_train_lmdb', 64), (caffe_pb2.TEST, 'mnist_test_lmdb', 100)):
        data = train.layer.add(name='mnist', type='Data', top=[data_top, 'label'])
        data.include.add(phase=phase)
        data.transform_param.scale = 0.00390625
        data.data_param.source = str(MNIST / source)
        data.data_param.batch_size = batch
        data.data_param.backend = caffe_pb2.DataParameter.LMDB
    train.layer.extend(body)
    train.layer.add(name='loss', type='SoftmaxWithLoss', bottom=[output, 'label'], top=['loss'])
    accuracy = train.layer.add(name='accuracy', type='Accuracy', bottom=[output, 'label'], top=['accuracy'])
    accuracy.include.add(phase=caffe_pb2.TEST)
    return text_format.MessageToString(train)


@pytest.mark.skipif(not (MNIST / 'mnist_train_lmdb' / 'data.mdb').exists(),
                    reason='MNIST is not in data/mnist (scripts/test.sh fetches it)')
def test_a_pytorch_lenet_imported_trains_on_mnist_with_trainer(tmp_path):
    torch = pytest.importorskip('torch', reason='python3-torch is not installed')

    class LeNet(torch.nn.Module):
        """Caffe's LeNet, written in PyTorch."""

        def __init__(self):
            super().__init__()
            self.conv1 = torch.nn.Conv2d(1, 20, 5)
            self.conv2 = torch.nn.Conv2d(20, 50, 5)
            self.fc1 = torch.nn.Linear(800, 500)
            self.fc2 = torch.nn.Linear(500, 10)

        def forward(self, x):
            x = torch.nn.functional.max_pool2d(self.conv1(x), 2)
            x = torch.nn.functional.max_pool2d(self.conv2(x), 2)
            x = torch.relu(self.fc1(x.view(x.size(0), -1)))
            return self.fc2(x)

    torch.manual_seed(0)
    model = LeNet().eval()
    onnx_path = tmp_path / 'lenet.onnx'
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), str(onnx_path), input_names=['data'],
                      output_names=['logits'], dynamic_axes={'data': {0: 'N'}, 'logits': {0: 'N'}},
                      opset_version=13)
    cortado.onnx.import_model(onnx_path, tmp_path / 'lenet.prototxt', tmp_path / 'lenet.caffemodel', batch_size=64)

    # The imported net computes what PyTorch computes before training.
    imported = cortado.Net(str(tmp_path / 'lenet.prototxt'), str(tmp_path / 'lenet.caffemodel'), cortado.TEST)
    x = torch.rand(64, 1, 28, 28)
    expected = model(x).detach().numpy()
    got = imported.forward(data=x.numpy())['logits']
    assert np.abs(got - expected).max() <= 1e-4 * np.abs(expected).max()

    net = write_text(tmp_path, 'lenet_train_test.prototxt', training_net(tmp_path / 'lenet.prototxt'))
    iterations = 5000
    solver = write_text(tmp_path, 'solver.prototxt',
                        LENET_SOLVER.format(net_field='net', net=net, max_iter=iterations, prefix=tmp_path / 'lenet'))
    trainer = str(BUILD / 'tools' / 'trainer')
    train = subprocess.run([trainer, 'train', f'--solver={solver}', f'--weights={tmp_path / "lenet.caffemodel"}'],
                           capture_output=True, text=True, cwd=REPO)
    assert train.returncode == 0, train.stderr[-3000:]
    trained = tmp_path / f'lenet_iter_{iterations}.caffemodel'
    test = subprocess.run([trainer, 'test', f'--model={net}', f'--weights={trained}', '--iterations=100'],
                          capture_output=True, text=True, cwd=REPO)
    assert test.returncode == 0, test.stderr[-3000:]
    accuracy = float(re.findall(r'accuracy = ([0-9.]+)', test.stderr)[-1])
    print(f'imported PyTorch LeNet after {iterations} iterations of trainer train: accuracy {accuracy}')
    assert accuracy >= 0.985
