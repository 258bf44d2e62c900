"""test_sweep.py: scripts/bench/sweep.sh end to end on the CPU: LeNet and cifar10_quick (their deploy
nets, made training nets) at three batch sizes give one CSV row each whose images/s is the batch over
the timed forward-backward, a PNG, and the best configuration of each net; bad settings are refused
with one line."""
import csv
import os
import re
import signal
import subprocess
import sys

import pytest

from conftest import BUILD, REPO

sys.path.insert(0, str(REPO / 'scripts' / 'bench'))
import sweep_report  # noqa: E402

SWEEP = REPO / 'scripts' / 'bench' / 'sweep.sh'


def run_sweep(out, **settings):
    env = dict(os.environ, CORTADO_BUILD_DIR=str(BUILD), OUT=str(out), GPUS='none', **settings)
    return subprocess.run(['bash', str(SWEEP)], env=env, capture_output=True, text=True, timeout=600)


def test_sweep_writes_the_csv_the_plot_and_the_best_configurations(tmp_path):
    result = run_sweep(tmp_path, BATCHES='2 4 8', THREADS='1', ITERATIONS='2')
    assert result.returncode == 0, result.stderr
    with open(tmp_path / 'sweep.csv', newline='') as f:
        rows = list(csv.DictReader(f))
    assert [(r['net'], r['batch_size']) for r in rows] == [
        (net, b) for net in ('lenet', 'cifar10_quick') for b in ('2', '4', '8')]
    for row in rows:
        assert (row['device'], row['threads'], row['iterations'], row['status']) == ('CPU', '1', '2', 'ok')
        both = float(row['forward_backward_ms'])
        assert both > 0 and float(row['forward_ms']) > 0 and float(row['backward_ms']) > 0
        assert abs(float(row['images_per_s']) - int(row['batch_size']) * 1000 / both) < 1e-4 * float(row['images_per_s'])
    # Progress: one line per configuration, numbered.
    assert '[1/6] lenet batch 2, 1 thread, CPU' in result.stderr
    assert '[6/6] cifar10_quick batch 8, 1 thread, CPU' in result.stderr
    png = (tmp_path / 'sweep.png').read_bytes()
    assert png.startswith(b'\x89PNG\r\n\x1a\n') and len(png) > 5000
    # The best configuration of each net is its row with the highest images/s.
    best = (tmp_path / 'best.txt').read_text().splitlines()
    assert len(best) == 2
    for line, net in zip(best, ('lenet', 'cifar10_quick')):
        top = max((r for r in rows if r['net'] == net), key=lambda r: float(r['images_per_s']))
        assert line.startswith(f"{net}: CPU, 1 thread, batch {top['batch_size']}: ")
        assert f"{float(top['images_per_s']):.1f} img/s" in line
    assert result.stdout.splitlines() == best


def test_the_plotted_series_are_the_csv_rows(tmp_path):
    path = tmp_path / 'sweep.csv'
    path.write_text('net,device,threads,batch_size,iterations,forward_ms,backward_ms,forward_backward_ms,'
                    'images_per_s,status\n'
                    'a,CPU,2,64,5,1,2,3,21333.3,ok\n'
                    'a,CPU,2,16,5,1,2,3,5333.3,ok\n'
                    'a,GPU0,1,16,5,1,2,3,90000,ok\n'
                    'a,CPU,2,256,5,,,,,failed\n')
    rows = sweep_report.read_rows(path)
    assert sweep_report.series(rows) == {('a', 'CPU', 2): [(16, 5333.3), (64, 21333.3)],
                                         ('a', 'GPU0', 1): [(16, 90000.0)]}
    assert sweep_report.best(rows)['a']['device'] == 'GPU0'
    sweep_report.plot(sweep_report.series(rows), tmp_path / 'plot.png')
    assert (tmp_path / 'plot.png').read_bytes().startswith(b'\x89PNG')


def test_bad_settings_are_one_line_and_exit_1(tmp_path):
    for settings in ({'BATCHES': '0'}, {'THREADS': 'two'}, {'NETS': 'models/none.prototxt'}):
        result = run_sweep(tmp_path, **settings)
        assert result.returncode == 1, settings
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert result.stderr.startswith('error: ')


def test_a_configuration_that_fails_is_a_failed_row_and_the_others_still_run(tmp_path):
    broken = tmp_path / 'broken.prototxt'
    broken.write_text('layer { name: "d" type: "Data" top: "x" top: "y"\n'
                      f'        data_param {{ source: "{tmp_path}/missing_lmdb" batch_size: 4 backend: LMDB }} }}\n')
    result = run_sweep(tmp_path / 'out', NETS=f'{broken} models/mnist/lenet.prototxt', BATCHES='2', THREADS='1',
                       ITERATIONS='1')
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith('error: 1 of 2 configurations failed')
    with open(tmp_path / 'out' / 'sweep.csv', newline='') as f:
        rows = list(csv.DictReader(f))
    assert [(r['net'], r['status']) for r in rows] == [('broken', 'failed'), ('lenet', 'ok')]
    assert 'missing_lmdb' in (tmp_path / 'out' / 'logs' / 'broken_CPU_t1_b2.log').read_text()
    assert (tmp_path / 'out' / 'best.txt').read_text().startswith('lenet: CPU, 1 thread, batch 2: ')


# ------------------------------------------------------------------------------------------------
# Mistakes and failures: the trainer's whole error line, the summary of every failure, one-line refusals.

def broken_net(directory):
    """A training net whose Data layer names a missing LMDB, in a folder whose name has dots."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / 'broken.prototxt'
    path.write_text('layer { name: "d" type: "Data" top: "x" top: "y"\n'
                    f'        data_param {{ source: "{directory}/missing.v1.lmdb" batch_size: 4 backend: LMDB }} }}\n')
    return path


def trainer_error(log):
    lines = [line for line in log.read_text().splitlines() if line.startswith('trainer: error: ')]
    assert len(lines) == 1 and 'missing.v1.lmdb' in lines[0]
    return lines[0]


def test_a_failed_configuration_is_reported_with_the_trainers_whole_error_line(tmp_path):
    broken = broken_net(tmp_path / 'nets.v2')
    out = tmp_path / 'out'
    result = run_sweep(out, NETS=f'{broken} models/mnist/lenet.prototxt', BATCHES='2', THREADS='1', ITERATIONS='1')
    assert result.returncode == 1
    error = trainer_error(out / 'logs' / 'broken_CPU_t1_b2.log')
    assert f'[1/2] broken batch 2, 1 thread, CPU: failed: {error} (' in result.stderr
    summary = result.stdout.splitlines()
    assert summary[0].startswith('lenet: CPU, 1 thread, batch 2: ')
    assert summary[1:] == [f'broken: CPU, 1 thread, batch 2: failed: {error}']
    assert (out / 'best.txt').read_text().splitlines() == summary[:1]


def test_when_every_configuration_fails_the_summary_lists_each_with_its_reason(tmp_path):
    broken = broken_net(tmp_path / 'nets.v2')
    out = tmp_path / 'out'
    out.mkdir()
    (out / 'best.txt').write_text('lenet: an earlier sweep\n')
    (out / 'sweep.png').write_bytes(b'an earlier plot')
    result = run_sweep(out, NETS=str(broken), BATCHES='2 4', THREADS='1', ITERATIONS='1')
    assert result.returncode == 1
    error = trainer_error(out / 'logs' / 'broken_CPU_t1_b2.log')
    assert result.stdout.splitlines() == [f'broken: CPU, 1 thread, batch {b}: failed: {error}' for b in (2, 4)]
    assert result.stderr.splitlines()[-1] == f'error: 2 of 2 configurations failed (see {out}/logs)'
    with open(out / 'sweep.csv', newline='') as f:
        assert [(r['batch_size'], r['status']) for r in csv.DictReader(f)] == [('2', 'failed'), ('4', 'failed')]
    # The earlier sweep's plot and best configurations do not stay beside this sweep's CSV.
    assert sorted(os.listdir(out)) == ['logs', 'nets', 'sweep.csv']


SMALL = dict(NETS='models/mnist/lenet.prototxt', BATCHES='2', THREADS='1', ITERATIONS='1')


def test_mistakes_are_refused_on_one_line_before_anything_runs(tmp_path):
    solver = 'models/mnist/lenet_solver.prototxt'
    cases = [
        (['--batches', '4'], {}, "error: sweep.sh takes no arguments, not '--batches': set NETS, BATCHES, THREADS, "
                                 "GPUS, ITERATIONS, OUT in the environment (see --help)"),
        ([], {'NETS': ' '}, 'error: NETS is empty: give at least one value (or leave it unset)'),
        ([], {'BATCHES': ''}, None),  # empty is unset: the default batches
        ([], {'BATCHES': ' '}, 'error: BATCHES is empty: give at least one value (or leave it unset)'),
        ([], {'ITERATIONS': '1 2'}, "error: ITERATIONS takes one positive integer, not '1 2'"),
        ([], {'GPUS': 'first'}, "error: GPUS takes GPU ids such as '0 1' (or none), not 'first'"),
        ([], {'NETS': solver}, f'error: NETS: {solver} is a solver prototxt; name the net prototxt instead'),
        ([], {'NETS': 'models/mnist/lenet.prototxt models/mnist/lenet.prototxt'},
         'error: NETS names models/mnist/lenet.prototxt twice'),
    ]
    for args, settings, message in cases:
        if message is None:
            continue
        out = tmp_path / 'out'
        env = dict(os.environ, CORTADO_BUILD_DIR=str(BUILD), OUT=str(out), GPUS='none', **SMALL)
        env.update(settings)
        result = subprocess.run(['bash', str(SWEEP), *args], env=env, capture_output=True, text=True, timeout=600)
        assert (result.returncode, result.stderr.splitlines()) == (1, [message]), (args, settings)
        assert not out.exists()
    a_file = tmp_path / 'a_file'
    a_file.write_text('')
    result = run_sweep(a_file, **SMALL)
    assert result.returncode == 1 and result.stderr.splitlines() == [
        f'error: OUT: cannot make the folder {a_file}/logs (is {a_file} a writable folder?)']
    result = subprocess.run(['bash', str(SWEEP), '--help'], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith('sweep.sh — training throughput')


def test_two_nets_with_one_file_name_keep_apart(tmp_path):
    deploy = (REPO / 'models' / 'mnist' / 'lenet.prototxt').read_text()
    nets = []
    for folder in ('a', 'b'):
        (tmp_path / folder).mkdir()
        nets.append(tmp_path / folder / 'net.prototxt')
        nets[-1].write_text(deploy)
    result = run_sweep(tmp_path / 'out', **dict(SMALL, NETS=' '.join(map(str, nets))))
    assert result.returncode == 0, result.stderr
    with open(tmp_path / 'out' / 'sweep.csv', newline='') as f:
        assert [r['net'] for r in csv.DictReader(f)] == ['net', 'b_net']
    assert sorted(os.listdir(tmp_path / 'out' / 'nets')) == ['b_net_train.prototxt', 'net_train.prototxt']


def test_an_interrupted_sweep_leaves_the_csv_as_it_was(tmp_path):
    out = tmp_path / 'out'
    out.mkdir()
    (out / 'sweep.csv').write_text('an earlier sweep\n')
    env = dict(os.environ, CORTADO_BUILD_DIR=str(BUILD), OUT=str(out), GPUS='none',
               **dict(SMALL, BATCHES='2 4 8 16 32 64 128'))
    # SIGINT as a terminal delivers it (a shell that started the tests in the background ignores it,
    # and an ignored signal cannot be trapped).
    sweep = subprocess.Popen(['bash', str(SWEEP)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert sweep.stderr.readline().startswith('[1/7] lenet batch 2')
    os.killpg(sweep.pid, signal.SIGINT)  # ctrl-C: the whole process group
    stdout, stderr = sweep.communicate(timeout=120)
    assert sweep.returncode == 130 and stdout == ''
    assert re.fullmatch(rf'error: interrupted after [1-6] of 7 configurations; {out}/sweep.csv is left as it was\n',
                        stderr), stderr
    assert (out / 'sweep.csv').read_text() == 'an earlier sweep\n'
    assert sorted(os.listdir(out)) == ['logs', 'nets', 'sweep.csv']


@pytest.mark.parametrize('rows, png, message', [
    ('a,CPU,x,16,5,1,2,3,5333.3,ok\n', 'x.png', "the row of a, CPU, batch 16: threads is 'x', not a number"),
    ('a,CPU,2,16,5,1,2,3,,ok\n', 'x.png', "the row of a, CPU, batch 16: images_per_s is '', not a number"),
    ('a,CPU,2,16,5,1,2,3,5333.3,ok\n', 'x.svg', 'the plot is a PNG: give a name ending in .png'),
    ('a,CPU,2,16,5,1,2,3,5333.3,ok\n', 'no_dir/x.png', 'No such file or directory'),
    ('a,CPU,2,16,5,,,,,failed\n', 'x.png', 'has no successful configuration'),
])
def test_sweep_report_mistakes_are_one_line(tmp_path, rows, png, message):
    path = tmp_path / 'sweep.csv'
    path.write_text('net,device,threads,batch_size,iterations,forward_ms,backward_ms,forward_backward_ms,'
                    'images_per_s,status\n' + rows)
    result = subprocess.run([sys.executable, str(REPO / 'scripts' / 'bench' / 'sweep_report.py'), str(path),
                             str(tmp_path / png)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith('sweep_report.py: ') and message in result.stderr
    assert sorted(os.listdir(tmp_path)) == ['sweep.csv']


def test_sweep_report_refuses_what_is_not_a_sweep_csv(tmp_path):
    for name, data, message in [('empty.csv', b'', 'not a sweep.sh CSV (it is empty)'),
                                ('other.csv', b'a,b\n1,2\n', 'not a sweep.sh CSV (no column "net")'),
                                ('binary.csv', bytes(range(128, 256)), "codec can't decode")]:
        (tmp_path / name).write_bytes(data)
        result = subprocess.run([sys.executable, str(REPO / 'scripts' / 'bench' / 'sweep_report.py'),
                                 str(tmp_path / name), str(tmp_path / 'x.png')], capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 1 and result.stderr.splitlines() == [
            f'sweep_report.py: cannot read {tmp_path / name}: ' + result.stderr.split(': ', 2)[2].rstrip()]
        assert message in result.stderr


def test_sweep_report_without_matplotlib_says_what_to_install(tmp_path):
    # -S: without site-packages, where matplotlib is installed.
    result = subprocess.run([sys.executable, '-S', str(REPO / 'scripts' / 'bench' / 'sweep_report.py'),
                             str(tmp_path / 'sweep.csv'), str(tmp_path / 'x.png')], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 1 and result.stderr.splitlines() == [
        "sweep_report.py: this script needs matplotlib (No module named 'matplotlib'): install python3-matplotlib "
        '(scripts/install_deps.sh)']
