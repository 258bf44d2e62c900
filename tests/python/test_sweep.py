"""test_sweep.py: scripts/bench/sweep.sh end to end on the CPU: LeNet and cifar10_quick (their deploy
nets, made training nets) at three batch sizes give one CSV row each whose images/s is the batch over
the timed forward-backward, a PNG, and the best configuration of each net; bad settings are refused
with one line."""
import csv
import os
import subprocess
import sys

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
