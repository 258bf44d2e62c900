"""test_solver.py: the solvers from Python (pycaffe's SGDSolver & co., get_solver): one step of each
update rule checked by hand on a net whose gradient is known, step/solve/iter, the test nets sharing
the train net's weights, apply_update after a script's own passes, snapshot and restore."""
import os

import numpy as np
import pytest

import cortado
from conftest import known_gradient_solver as solver_file

@pytest.mark.parametrize('cls, expected_w', [
    (cortado.SGDSolver, 0.2 - 0.1 * 0.1),
    (cortado.NesterovSolver, 0.2 - 0.1 * 0.1),  # momentum 0: plain SGD
    (cortado.AdaGradSolver, 0.2 - 0.1 * 0.1 / (0.1 + 1e-8)),
    (cortado.RMSPropSolver, 0.2 - 0.1 * 0.1 / (np.sqrt(0.01 * 0.01) + 1e-8)),  # rms_decay 0.99
    (cortado.AdamSolver, 0.2 - 0.1 * (0.1 / 0.1) / (np.sqrt(0.01) / np.sqrt(0.01) * 1 + 1e-8)),
])
def test_one_step_of_each_rule(tmp_path, cls, expected_w, mode):
    solver = cls(solver_file(tmp_path))
    assert solver.type == cls.__name__[:-len('Solver')]
    solver.step(1)
    assert solver.iter == 1
    np.testing.assert_allclose(solver.net.params['ip'][0].data, expected_w, rtol=1e-4)
    np.testing.assert_allclose(solver.net.blobs['loss'].data, 0.5 * 0.1 ** 2, rtol=1e-4)


def test_adadelta_moves_the_weights(tmp_path, mode):
    solver = cortado.AdaDeltaSolver(solver_file(tmp_path, 'momentum: 0.95\ndelta: 1e-6'))
    solver.step(1)
    # AdaDelta's first step: sqrt(delta) / sqrt(0.05 g^2 + delta) * g, with lr 0.1.
    g = 0.1
    step = np.sqrt(1e-6) / np.sqrt(0.05 * g * g + 1e-6) * g
    np.testing.assert_allclose(solver.net.params['ip'][0].data, 0.2 - 0.1 * step, rtol=1e-3)


def test_get_solver_reads_the_type(tmp_path):
    solver = cortado.get_solver(solver_file(tmp_path, 'type: "Adam"'))
    assert solver.type == 'Adam'
    assert cortado.get_solver(solver_file(tmp_path)).type == 'SGD'


def test_step_solve_snapshot_restore(tmp_path, mode):
    path = solver_file(tmp_path, 'momentum: 0.9')
    solver = cortado.SGDSolver(path)
    solver.step(2)
    snapshot = solver.snapshot()
    assert snapshot.endswith('snap_iter_2.solverstate') and os.path.exists(snapshot)
    weights_at_2 = solver.net.params['ip'][0].data.copy()
    solver.step(1)
    at_3 = solver.net.params['ip'][0].data.copy()
    fresh = cortado.SGDSolver(path)
    fresh.restore(snapshot)
    assert fresh.iter == 2
    np.testing.assert_array_equal(fresh.net.params['ip'][0].data, weights_at_2)
    fresh.step(1)  # the momentum was restored too
    np.testing.assert_array_equal(fresh.net.params['ip'][0].data, at_3)
    fresh.solve()
    assert fresh.iter == 5
    assert os.path.exists(tmp_path / 'snap_iter_5.caffemodel')


def test_solve_resumes(tmp_path):
    path = solver_file(tmp_path)
    solver = cortado.SGDSolver(path)
    solver.step(3)
    state = solver.snapshot()
    resumed = cortado.SGDSolver(path)
    resumed.solve(state)
    assert resumed.iter == 5


def test_test_nets_share_the_weights(tmp_path, mode):
    path = solver_file(tmp_path, 'test_iter: 1\ntest_interval: 100')
    solver = cortado.SGDSolver(path)
    assert len(solver.test_nets) == 1
    solver.step(2)
    test_net = solver.test_nets[0]
    np.testing.assert_array_equal(test_net.params['ip'][0].data, solver.net.params['ip'][0].data)
    # A script's edit of the train net's weights is what the test net runs.
    solver.net.params['ip'][0].data[...] = 0.5
    solver.net.params['ip'][1].data[...] = 0
    test_net.forward()
    np.testing.assert_allclose(test_net.blobs['ip'].data, 1.5)


def test_apply_update_after_own_passes(tmp_path, mode):
    solver = cortado.SGDSolver(solver_file(tmp_path))
    net = solver.net
    net.clear_param_diffs()
    net.forward()
    net.backward()
    np.testing.assert_allclose(net.params['ip'][0].diff, 0.1, rtol=1e-5)
    solver.apply_update()
    assert solver.iter == 0
    np.testing.assert_allclose(net.params['ip'][0].data, 0.19, rtol=1e-5)


def test_solver_errors(tmp_path):
    with pytest.raises(cortado.CortadoError, match='missing'):
        cortado.SGDSolver(str(tmp_path / 'missing.prototxt'))
