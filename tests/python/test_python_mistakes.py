"""test_python_mistakes.py: a script's mistakes, tried on the public calls of the package (the solvers,
Net and its passes, Blob, weights files, io, Classifier and Detector, net_spec, draw, onnx, the session
functions). Each raises the exception a pycaffe user catches (KeyError for a name that is not there,
TypeError for the wrong kind of argument, ValueError for a wrong value, cortado.CortadoError, a
RuntimeError, from the engine), in one line naming what to fix, and leaves the object as it was."""
import contextlib
import os
import pathlib

import numpy as np
import pytest
import skimage.io
from google.protobuf import text_format

import cortado
import cortado.draw
import cortado.onnx
from cortado import io as caffe_io
from cortado import layers as L
from cortado.proto import caffe_pb2
from conftest import KNOWN_GRADIENT, TINY, write_text

# Two inputs, so that a pass can find one right and the other wrong.
TWO_INPUTS = """
name: "two_inputs"
force_backward: true
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 } } }
layer { name: "label" type: "Input" top: "label" input_param { shape { dim: 2 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.5 } } }
layer { name: "prob" type: "Softmax" bottom: "ip" top: "prob" }
"""

MEMORY_DATA = """
layer { name: "mem" type: "MemoryData" top: "data" top: "label"
        memory_data_param { batch_size: 2 channels: 1 height: 1 width: 3 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
"""

DEPLOY = """
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 dim: 4 dim: 4 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.5 } } }
layer { name: "prob" type: "Softmax" bottom: "ip" top: "prob" }
"""


@contextlib.contextmanager
def refused(exception, *fragments):
    """The block raises `exception` (or a subclass) with a one-line message holding every fragment."""
    with pytest.raises(exception) as info:
        yield info
    message = str(info.value)
    assert '\n' not in message, message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


@pytest.fixture
def net(tmp_path):
    """A TEST net with inputs data (2 x 3) and label (2), outputs label and prob, and known inputs."""
    two = cortado.Net(str(write_text(tmp_path, 'two.prototxt', TWO_INPUTS)), cortado.TEST)
    two.blobs['data'].data[...] = np.arange(6).reshape(2, 3)
    two.blobs['label'].data[...] = [1, 0]
    return two


def snapshot(net):
    """Every blob's data and diff and every parameter, copied."""
    state = {name: (blob.data.copy(), blob.diff.copy()) for name, blob in net.blobs.items()}
    state.update({(name, i): blob.data.copy() for name, blobs in net.params.items() for i, blob in enumerate(blobs)})
    return state


def assert_unchanged(net, before):
    after = snapshot(net)
    assert after.keys() == before.keys()
    for key, values in before.items():
        for got, expected in zip(np.atleast_1d(after[key]), np.atleast_1d(values)):
            np.testing.assert_array_equal(got, expected, err_msg=str(key))


def solver_file(tmp_path, prefix='snap'):
    """Unlike conftest's known_gradient_solver, no random_seed: test_solver_files restores this very
    text as a solver state, and these bytes are ones the binary parser refuses as such."""
    net_path = write_text(tmp_path, 'known.prototxt', KNOWN_GRADIENT)
    return str(write_text(tmp_path, 'solver.prototxt', f"""
        net: "{net_path}"
        base_lr: 0.1
        lr_policy: "fixed"
        max_iter: 5
        display: 0
        snapshot_prefix: "{tmp_path}/{prefix}"
        """))


# ---- solvers -------------------------------------------------------------------------------------


def test_step_refuses_a_negative_or_non_integer_count(tmp_path):
    solver = cortado.SGDSolver(solver_file(tmp_path))
    weights = solver.net.params['ip'][0].data.copy()
    with refused(ValueError, 'step: iters', '-1'):
        solver.step(-1)
    with refused(TypeError, 'step: iters', '1.5'):
        solver.step(1.5)
    with refused(TypeError, 'step: iters', "'2'"):
        solver.step('2')
    with refused(ValueError, 'step: iters', str(2 ** 40)):
        solver.step(2 ** 40)
    solver.step(0)  # as in Caffe: nothing
    assert solver.iter == 0
    np.testing.assert_array_equal(solver.net.params['ip'][0].data, weights)
    solver.step(np.int64(2))  # a numpy integer is a count
    assert solver.iter == 2


def test_solver_files(tmp_path):
    with refused(TypeError, 'Solver: filename', 'None'):
        cortado.Solver(None)
    with refused(cortado.CortadoError, 'nope.prototxt'):
        cortado.get_solver(str(tmp_path / 'nope.prototxt'))
    solver = cortado.SGDSolver(pathlib.Path(solver_file(tmp_path)))  # a path object is a file name
    solver.step(1)
    weights = solver.net.params['ip'][0].data.copy()
    with refused(cortado.CortadoError, 'missing.solverstate'):
        solver.restore(str(tmp_path / 'missing.solverstate'))
    with refused(cortado.CortadoError, 'solver.prototxt', 'not a valid'):
        solver.restore(str(tmp_path / 'solver.prototxt'))
    with refused(TypeError, 'restore: filename'):
        solver.restore(3)
    with refused(TypeError, 'solve: resume_file'):
        solver.solve(3)
    with refused(cortado.CortadoError, 'missing.solverstate'):
        solver.solve(str(tmp_path / 'missing.solverstate'))
    assert solver.iter == 1
    np.testing.assert_array_equal(solver.net.params['ip'][0].data, weights)
    elsewhere = cortado.SGDSolver(solver_file(tmp_path, prefix='nodir/snap'))
    with refused(cortado.CortadoError, str(tmp_path / 'nodir' / 'snap_iter_0.caffemodel')):
        elsewhere.snapshot()
    state = solver.snapshot()
    solver.restore(pathlib.Path(state))
    assert solver.iter == 1


# ---- Net construction ----------------------------------------------------------------------------


def test_net_arguments(tmp_path, tiny):
    with refused(TypeError, 'Net: phase', 'cortado.TRAIN or cortado.TEST', "'TEST'"):
        cortado.Net(tiny, 'TEST')
    with refused(ValueError, 'Net: phase', '5'):
        cortado.Net(tiny, 5)
    with refused(TypeError, 'Net: stages', "['deploy']"):
        cortado.Net(tiny, cortado.TEST, stages='deploy')
    with refused(TypeError, 'Net: level', "'x'"):
        cortado.Net(tiny, cortado.TEST, level='x')
    with refused(TypeError, 'Net: network_file', 'None'):
        cortado.Net(None, cortado.TEST)
    weights = str(tmp_path / 'tiny.caffemodel')
    cortado.Net(tiny, cortado.TEST).save(pathlib.Path(weights))
    with refused(TypeError, 'Net(network_file, weights, phase)'):
        cortado.Net(tiny, weights, cortado.TEST, stages=['a'])
    # Path objects are file names, in both of pycaffe's forms.
    assert list(cortado.Net(pathlib.Path(tiny), pathlib.Path(weights), cortado.TEST).blobs)[0] == 'data'
    assert cortado.Net(pathlib.Path(tiny), cortado.TEST, weights=pathlib.Path(weights)).params['ip'][0].count == 12


# ---- passes --------------------------------------------------------------------------------------


def test_forward_names_an_unknown_input(net):
    before = snapshot(net)
    x = np.ones((2, 3), np.float32)
    with refused(TypeError, "forward: unknown keyword argument 'datta'", "did you mean 'data'",
                 'inputs: data, label'):
        net.forward(datta=x, label=[0, 1])
    with refused(TypeError, "missing input 'label'", 'data, label'):
        net.forward(data=x)
    assert_unchanged(net, before)


def test_forward_checks_every_input_before_writing_any(net):
    before = snapshot(net)
    with refused(ValueError, "forward: input 'label' has shape (2,), not (3,)", "reshape(3,)"):
        net.forward(data=np.full((2, 3), 7, np.float32), label=np.ones(3))
    with refused(ValueError, "input 'data' has shape (2, 3), not (2, 4)"):
        net.forward(data=np.ones((2, 4)), label=[0, 1])
    with refused(TypeError, "input 'data' must be an array of numbers"):
        net.forward(data='abc', label=[0, 1])
    assert_unchanged(net, before)
    # Lists, and labels of the same values in another shape, are taken.
    net.forward(data=[[1, 2, 3], [4, 5, 6]], label=np.array([[0], [1]]))
    np.testing.assert_array_equal(net.blobs['label'].data, [0, 1])


def test_forward_takes_no_other_layout(deploy):
    net = cortado.Net(deploy[0], cortado.TEST)
    with refused(ValueError, "forward: input 'data' has shape (2, 3, 4, 4), not (2, 4, 4, 3)"):
        net.forward(data=np.zeros((2, 4, 4, 3)))  # H x W x C images, not transposed
    assert net.forward(data=np.zeros((2, 3, 4, 4, 1)))['prob'].shape == (2, 2)  # the same values in order


def test_pass_layer_and_blob_names(net):
    before = snapshot(net)
    with refused(KeyError, "forward: start: no layer named 'iq'", "did you mean 'ip'", 'data, label, ip, prob'):
        net.forward(start='iq')
    with refused(KeyError, "forward: end: no layer named 'nope'"):
        net.forward(end='nope')
    with refused(ValueError, "forward: start layer 'prob' comes after end layer 'data'"):
        net.forward(start='prob', end='data')
    with refused(KeyError, "backward: start: no layer named 'nope'"):
        net.backward(start='nope')
    with refused(ValueError, "backward: start layer 'data' comes before end layer 'prob'"):
        net.backward(start='data', end='prob')
    with refused(KeyError, "forward: blobs: no blob named 'pro'", "did you mean 'prob'"):
        net.forward(blobs=['pro'])
    with refused(KeyError, "backward: diffs: no blob named 'nope'"):
        net.backward(diffs=['nope'])
    assert_unchanged(net, before)
    assert set(net.forward(blobs='ip')) == {'ip', 'label', 'prob'}  # one name, not its letters


def test_backward_names_unknown_and_misshapen_diffs(net):
    net.forward()
    before = snapshot(net)
    with refused(TypeError, "backward: unknown keyword argument 'prb'", "did you mean 'prob'", 'outputs: label, prob'):
        net.backward(prb=np.ones((2, 4)), label=np.ones(2))
    with refused(ValueError, "backward: output 'prob' has shape (2, 4), not (2, 5)"):
        net.backward(label=np.ones(2), prob=np.ones((2, 5)))
    assert_unchanged(net, before)


def test_forward_all_and_forward_backward_all_misuse(net):
    before = snapshot(net)
    rows = np.ones((5, 3), np.float32)
    with refused(TypeError, "forward_all: unknown keyword argument 'datta'", "did you mean 'data'"):
        net.forward_all(datta=rows, label=np.ones(5))
    with refused(ValueError, 'forward_all: the arrays differ in length', 'data: 5', 'label: 4'):
        net.forward_all(data=rows, label=np.ones(4))
    with refused(ValueError, "forward_all: input 'data' takes rows of shape (3,)", '(5, 4)'):
        net.forward_all(data=np.ones((5, 4)), label=np.ones(5))
    with refused(TypeError, 'forward_all: give the net', 'data, label'):
        net.forward_all()
    with refused(KeyError, "forward_all: blobs: no blob named 'nope'"):
        net.forward_all(blobs=['nope'], data=rows, label=np.ones(5))
    with refused(TypeError, "forward_backward_all: unknown keyword argument 'datta'", 'outputs: label, prob'):
        net.forward_backward_all(datta=rows)
    with refused(TypeError, "forward_backward_all: missing input 'label'"):
        net.forward_backward_all(data=rows)
    with refused(KeyError, "forward_backward_all: diffs: no blob named 'nope'"):
        net.forward_backward_all(diffs=['nope'], data=rows, label=np.ones(5))
    assert_unchanged(net, before)
    assert net.forward_all(data=rows, label=np.ones(5))['prob'].shape == (5, 4)


# ---- blobs ---------------------------------------------------------------------------------------


def test_missing_names_are_key_errors_naming_the_closest(net):
    with refused(KeyError, "net.blobs: no blob named 'dta'", "did you mean 'data'", 'data, label, ip, prob'):
        net.blobs['dta']
    with refused(KeyError, "net.params: no layer named 'iq'", "did you mean 'ip'", 'layers with parameters: ip'):
        net.params['iq']
    with refused(KeyError, "net.layer_dict: no layer named 'nope'"):
        net.layer_dict['nope']
    with refused(KeyError, "net.top_names: no layer named 'nope'"):
        net.top_names['nope']
    assert 'nope' not in net.blobs and net.blobs.get('nope') is None


def test_blob_reshape_arguments(net):
    data = net.blobs['data']
    with refused(ValueError, 'reshape: dimension 0', '-1'):
        data.reshape(-1, 3)
    with refused(TypeError, 'reshape: dimension 1', "'a'"):
        data.reshape(2, 'a')
    with refused(TypeError, 'reshape: dimension 0', '2.5'):
        data.reshape((2.5, 3))
    with refused(ValueError, 'reshape: dimension 0', str(2 ** 31)):
        data.reshape(2 ** 31, 3)
    assert data.shape == (2, 3)


def test_a_refused_input_shape_leaves_the_net_as_it_was(tmp_path, net):
    """An input reshaped to a shape the layers refuse: the net keeps its shapes, and what is done with
    it next (another reshape, share_with) does not meet the refused shape again."""
    before = snapshot(net)
    with refused(cortado.CortadoError, "reshape: input 'data' to (100000, 100000, 1000)", '2^40'):
        net.blobs['data'].reshape(100000, 100000, 1000)
    with refused(cortado.CortadoError, "reshape: input 'data' to (2, 5)", 'layer ip'):  # 3 inputs per output
        net.blobs['data'].reshape(2, 5)
    assert net.blobs['data'].shape == (2, 3)
    assert_unchanged(net, before)
    other = cortado.Net(str(tmp_path / 'two.prototxt'), cortado.TEST)
    net.share_with(other)
    net.blobs['label'].reshape(3)
    assert net.blobs['data'].shape == (2, 3) and net.blobs['label'].shape == (3,)
    np.testing.assert_array_equal(net.blobs['data'].data, before['data'][0])


def test_blob_data_is_written_into_not_replaced(net):
    with refused(AttributeError, 'Blob.data cannot be replaced', 'blob.data[...] = values'):
        net.blobs['data'].data = np.zeros((2, 3))
    with refused(AttributeError, 'Blob.diff cannot be replaced'):
        net.blobs['data'].diff = np.zeros((2, 3))
    with refused(ValueError, 'could not broadcast', '(3,3)', '(2,3)'):  # numpy's own check, before it writes
        net.blobs['data'].data[...] = np.zeros((3, 3))
    np.testing.assert_array_equal(net.blobs['data'].data, np.arange(6).reshape(2, 3))


def test_set_input_arrays_refused_keeps_the_arrays_it_had(tmp_path, net):
    memory = cortado.Net(str(write_text(tmp_path, 'memory.prototxt', MEMORY_DATA)), cortado.TEST)
    data = np.arange(6, dtype=np.float32).reshape(2, 1, 1, 3)
    memory.set_input_arrays(data, np.array([0, 1]))
    kept = memory._input_arrays
    with refused(cortado.CortadoError, 'data must be N x 1 x 1 x 3', 'not (2, 1, 1, 4)'):
        memory.set_input_arrays(np.zeros((2, 1, 1, 4)), np.zeros(2))
    with refused(cortado.CortadoError, 'multiple of the batch size'):
        memory.set_input_arrays(np.zeros((3, 1, 1, 3)), np.zeros(3))
    with refused(cortado.CortadoError, 'one value per item (2)', 'not (3, 1, 1, 1)'):
        memory.set_input_arrays(np.zeros((2, 1, 1, 3)), np.zeros(3))
    assert memory._input_arrays is kept  # the layer still reads these
    memory.forward()
    np.testing.assert_array_equal(memory.blobs['data'].data, data)
    with refused(RuntimeError, 'set_input_arrays: the net has no MemoryData layer', 'Input, Input, InnerProduct'):
        net.set_input_arrays(data, np.array([0, 1]))


def test_share_with_takes_a_net(net):
    with refused(TypeError, 'share_with: other must be a cortado.Net', 'None'):
        net.share_with(None)


# ---- weights files -------------------------------------------------------------------------------


def test_weights_files_name_the_file_and_leave_nothing_half_written(tmp_path, net):
    before = snapshot(net)
    missing_dir = tmp_path / 'nodir'
    with refused(cortado.CortadoError, str(missing_dir / 'w.caffemodel')):
        net.save(str(missing_dir / 'w.caffemodel'))
    with refused(cortado.CortadoError, str(missing_dir / 'w.h5')):
        net.save_hdf5(str(missing_dir / 'w.h5'))
    with refused(cortado.CortadoError, 'missing.caffemodel'):
        net.copy_from(str(tmp_path / 'missing.caffemodel'))
    prototxt = write_text(tmp_path, 'not_weights.prototxt', TINY)
    with refused(cortado.CortadoError, 'not_weights.prototxt', 'not a valid'):
        net.copy_from(str(prototxt))
    with refused(cortado.CortadoError, 'not_weights.prototxt', 'not an HDF5 file'):
        net.load_hdf5(str(prototxt))
    with refused(TypeError, 'save: filename', 'None'):
        net.save(None)
    assert not missing_dir.exists()
    assert sorted(os.listdir(tmp_path)) == ['not_weights.prototxt', 'two.prototxt']  # no temporary files
    assert_unchanged(net, before)
    net.save(tmp_path / 'w.caffemodel')  # a path object is a file name
    net.copy_from(tmp_path / 'w.caffemodel')
    assert_unchanged(net, before)


def test_draw_net_to_file_refused_leaves_the_file_as_it_was(tmp_path):
    param = text_format.Parse(TWO_INPUTS, caffe_pb2.NetParameter())
    existing = tmp_path / 'net.raw'
    existing.write_text('drawn before')
    with refused(ValueError, "Unknown rankdir 'XX'", 'LR, RL, TB, BT'):
        cortado.draw.draw_net_to_file(param, str(existing), rankdir='XX')
    assert existing.read_text() == 'drawn before'
    with refused(TypeError, 'must be a NetParameter', 'not Net'):
        cortado.draw.draw_net(cortado.Net(str(write_text(tmp_path, 'two.prototxt', TWO_INPUTS)), cortado.TEST), 'LR')
    with refused(FileNotFoundError, str(tmp_path / 'nodir')):
        cortado.draw.draw_net_to_file(param, str(tmp_path / 'nodir' / 'net.raw'))
    cortado.draw.draw_net_to_file(param, str(existing))
    assert existing.read_text().startswith('digraph')
    assert sorted(os.listdir(tmp_path)) == ['net.raw', 'two.prototxt']


# ---- io ------------------------------------------------------------------------------------------


def test_load_image_names_what_it_cannot_read(tmp_path):
    text = write_text(tmp_path, 'notes.txt', 'not an image')
    with refused(ValueError, 'load_image', str(text), 'not an image file'):
        caffe_io.load_image(str(text))
    with refused(IsADirectoryError, str(tmp_path)):
        caffe_io.load_image(str(tmp_path))
    with refused(FileNotFoundError, 'missing.png'):
        caffe_io.load_image(str(tmp_path / 'missing.png'))


def test_transformer_settings_are_checked_when_set():
    with refused(TypeError, 'Transformer takes {input name: blob shape}', 'not list'):
        caffe_io.Transformer(['data'])
    t = caffe_io.Transformer({'data': (1, 3, 4, 4)})
    with refused(KeyError, "Transformer: no input named 'dta'", "did you mean 'data'"):
        t.set_mean('dta', np.zeros(3))
    with refused(ValueError, 'Transpose order (0, 0, 1)', 'not an order of the axes (0, 1, 2)'):
        t.set_transpose('data', (0, 0, 1))
    with refused(ValueError, 'Channel swap (0, 1, 5)', '0..2'):
        t.set_channel_swap('data', (0, 1, 5))
    with refused(TypeError, 'set_raw_scale', "'x'"):
        t.set_raw_scale('data', 'x')
    with refused(TypeError, 'set_input_scale', 'None'):
        t.set_input_scale('data', None)
    assert t.transpose == {} and t.channel_swap == {} and t.raw_scale == {} and t.input_scale == {}
    t.set_mean('data', [104, 117, 123])  # a list is an array
    with refused(ValueError, 'takes items of shape (3, 4, 4)', "set_transpose('data', (2, 0, 1))"):
        t.preprocess('data', np.zeros((4, 4, 3)))  # the transpose forgotten
    t.set_transpose('data', (2, 0, 1))
    with refused(ValueError, 'preprocess: input data takes (H x W x K) images', '(4, 4)'):
        t.preprocess('data', np.zeros((4, 4)))
    with refused(ValueError, 'preprocess: input data takes items of shape (3, 4, 4)', 'gives (1, 4, 4)'):
        t.preprocess('data', np.zeros((4, 4, 1)))
    t.set_channel_swap('data', (2, 1, 0))
    with refused(ValueError, 'the image of shape (4, 4, 1) has 1 channels; channel swap (2, 1, 0)'):
        t.preprocess('data', np.zeros((4, 4, 1)))
    assert t.preprocess('data', np.zeros((4, 4, 3))).shape == (3, 4, 4)


def test_message_conversions_name_the_mismatch():
    blob = caffe_pb2.BlobProto()
    blob.shape.dim.extend([2, 3])
    blob.data.extend([1, 2])
    with refused(ValueError, 'blobproto_to_array', 'holds 2 values', '(2, 3) needs 6'):
        caffe_io.blobproto_to_array(blob)
    with refused(TypeError, 'blobproto_to_array takes a BlobProto', 'NoneType'):
        caffe_io.blobproto_to_array(None)
    with refused(ValueError, 'datum_to_array', 'holds 3 values', 'needs 4'):
        caffe_io.datum_to_array(caffe_pb2.Datum(channels=1, height=2, width=2, data=b'abc'))
    with refused(TypeError, 'array_to_datum: label', "'x'"):
        caffe_io.array_to_datum(np.zeros((1, 2, 2)), label='x')


def test_image_helpers_check_their_images():
    with refused(ValueError, 'oversample: no images'):
        caffe_io.oversample([], (2, 2))
    with refused(ValueError, 'oversample: crops of 8 x 8 do not fit in images of 4 x 4'):
        caffe_io.oversample([np.zeros((4, 4, 3))], (8, 8))
    with refused(ValueError, 'oversample: the images must be (H x W x K)', '(4, 4)'):
        caffe_io.oversample([np.zeros((4, 4))], (2, 2))
    with refused(ValueError, 'resize_image: the image must be (H x W x K)', '(4,)'):
        caffe_io.resize_image(np.zeros(4), (2, 2))


# ---- Classifier, Detector ------------------------------------------------------------------------


@pytest.fixture
def deploy(tmp_path):
    proto = str(write_text(tmp_path, 'deploy.prototxt', DEPLOY))
    weights = str(tmp_path / 'deploy.caffemodel')
    cortado.Net(proto, cortado.TEST).save(weights)
    return proto, weights


def test_classifier_checks_its_images(tmp_path, deploy):
    with refused(ValueError, 'Classifier: image_dims', '(4,)'):
        cortado.Classifier(*deploy, image_dims=(4,))
    no_input = str(write_text(tmp_path, 'no_input.prototxt', KNOWN_GRADIENT))
    with refused(ValueError, 'Classifier takes a deploy net', 'this net has no input'):
        cortado.Classifier(no_input, None)
    with refused(ValueError, 'Detector takes a deploy net', 'this net has no input'):
        cortado.Detector(no_input, None)
    classifier = cortado.Classifier(*deploy)
    with refused(ValueError, 'predict: no images'):
        classifier.predict([])
    with refused(ValueError, 'predict: image 0 has shape (4, 4)'):
        classifier.predict([np.zeros((4, 4))])
    with refused(ValueError, 'predict: image 1 has shape (4, 4, 1)'):
        classifier.predict([np.zeros((4, 4, 3)), np.zeros((4, 4, 1))])
    with refused(ValueError, 'takes items of shape (3, 4, 4)', 'gives (1, 4, 4)'):  # not broadcast to 3 channels
        classifier.predict([np.zeros((4, 4, 1))])
    assert classifier.predict([np.zeros((6, 6, 3))]).shape == (1, 2)


def test_detector_checks_its_windows(tmp_path, deploy):
    image = str(tmp_path / 'image.png')
    skimage.io.imsave(image, (np.random.RandomState(0).rand(8, 8, 3) * 255).astype(np.uint8))
    detector = cortado.Detector(*deploy)
    for window in ((20, 20, 30, 30), (5, 5, 2, 2), (1, 2)):
        with refused(ValueError, 'detect_windows: window %r' % (window,), 'inside its 8 x 8 image'):
            detector.detect_windows([(image, [window])])
    assert len(detector.detect_windows([(image, [(0, 0, 4, 4)])])) == 1


# ---- net_spec, onnx, session ---------------------------------------------------------------------


def test_net_spec_names_the_field_and_the_layer():
    data = L.Input(shape=dict(dim=[1, 3]))
    with refused(ValueError, 'Convolution layer: ntop', '-1'):
        L.Convolution(data, ntop=-1)
    with refused(ValueError, 'Convolution layer: ntop', "'2'"):
        L.Convolution(data, ntop='2')
    with refused(TypeError, 'InnerProductParameter.num_output', "'x'"):
        L.InnerProduct(data, num_output='x').to_proto()
    with refused(TypeError, 'LayerParameter.loss_weight', "'x'"):
        L.InnerProduct(data, num_output=1, loss_weight=['x']).to_proto()


def test_onnx_arguments(tmp_path, deploy):
    if not cortado.has_onnx():
        pytest.skip('this build has no ONNX support')
    with refused(ValueError, "input_shapes['data']", "'abc'"):
        cortado.onnx.export(deploy[0], None, str(tmp_path / 'x.onnx'), input_shapes={'data': 'abc'})
    with refused(TypeError, 'export: net_file', 'None'):
        cortado.onnx.export(None, None, str(tmp_path / 'x.onnx'))
    with refused(ValueError, 'import_model: batch_size', '0'):
        cortado.onnx.import_model(str(tmp_path / 'x.onnx'), str(tmp_path / 'n.prototxt'), str(tmp_path / 'n.w'), 0)
    assert not (tmp_path / 'x.onnx').exists()
    cortado.onnx.export(pathlib.Path(deploy[0]), pathlib.Path(deploy[1]), tmp_path / 'x.onnx')  # path objects
    assert (tmp_path / 'x.onnx').stat().st_size > 0


def test_session_arguments():
    with refused(TypeError, 'init_log: level', "'x'"):
        cortado.init_log('x')
    with refused(TypeError, 'set_device: device must be a GPU number', "'0'"):
        cortado.set_device('0')
    assert (cortado.solver_rank(), cortado.solver_count()) == (0, 1)  # outside data-parallel training
