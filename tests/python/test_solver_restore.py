"""test_solver_restore.py: a refused Solver.restore() leaves the solver as it was. The solverstate of
another net whose first layer matches used to raise after setting the iteration and copying that layer,
so a script that caught the error trained on from a mixed state; a solver state of another update rule
(more history) likewise; and a .caffemodel given as a state read as an empty state at iteration 0."""
import numpy as np
import pytest

import cortado
from conftest import write_text

# Two InnerProducts; `out` sets the second one's size (and the target's).
NET = """
name: "two_layers"
layer { name: "x" type: "DummyData" top: "x" top: "y"
        dummy_data_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: %(out)d }
                           data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 0.5 } } }
layer { name: "ip1" type: "InnerProduct" bottom: "x" top: "h"
        inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.5 } } }
layer { name: "ip2" type: "InnerProduct" bottom: "h" top: "z"
        inner_product_param { num_output: %(out)d weight_filler { type: "gaussian" std: 0.5 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" }
"""


def make_solver(tmp_path, name, out=1, solver_type='SGD'):
    net = write_text(tmp_path, name + '_net.prototxt', NET % {'out': out})
    solver = write_text(tmp_path, name + '_solver.prototxt', f"""
        net: "{net}"
        type: "{solver_type}"
        base_lr: 0.05
        momentum: 0.9
        lr_policy: "fixed"
        max_iter: 100
        display: 0
        snapshot_prefix: "{tmp_path}/{name}"
        random_seed: 7
        """)
    return cortado.get_solver(str(solver))


def state_of(solver):
    return solver.iter, [[blob.data.copy() for blob in blobs] for blobs in solver.net.params.values()]


def assert_same_state(before, after):
    assert before[0] == after[0]
    for layer_before, layer_after in zip(before[1], after[1]):
        for a, b in zip(layer_before, layer_after):
            np.testing.assert_array_equal(a, b)


def test_refused_restore_leaves_the_solver_unchanged(tmp_path):
    donor = make_solver(tmp_path, 'wide', out=3)
    donor.step(3)
    wide_state = donor.snapshot()
    adam = make_solver(tmp_path, 'adam', solver_type='Adam')
    adam.step(4)
    adam_state = adam.snapshot()
    caffemodel = adam_state.replace('.solverstate', '.caffemodel')

    solver = make_solver(tmp_path, 'mine')
    solver.step(2)
    before = state_of(solver)
    with pytest.raises(RuntimeError, match=r'layer ip2 \(InnerProduct\): blob 0 has shape 1 2 \(2\) in the net '
                                           r'but 3 2 \(6\)'):
        solver.restore(wide_state)
    assert_same_state(before, state_of(solver))
    with pytest.raises(RuntimeError, match='holds 8 history blobs but this SGD solver on this net needs 4'):
        solver.restore(adam_state)
    assert_same_state(before, state_of(solver))
    with pytest.raises(RuntimeError, match='is a weights file, not a solver state'):
        solver.restore(caffemodel)
    assert_same_state(before, state_of(solver))

    # Going on after the refusals is going on from where it stood: as a solver never refused.
    untouched = make_solver(tmp_path, 'untouched')
    untouched.step(2)
    solver.step(3)
    untouched.step(3)
    assert_same_state(state_of(untouched), state_of(solver))


def test_restore_of_its_own_state_still_works(tmp_path):
    solver = make_solver(tmp_path, 'own')
    solver.step(3)
    state = solver.snapshot()
    at_three = state_of(solver)
    solver.step(2)
    solver.restore(state)
    assert_same_state(at_three, state_of(solver))
