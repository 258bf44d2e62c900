"""test_parse_log.py: tools/extra/parse_log.py and extract_seconds.py, the Python 3 successors of
Caffe's log parsers: (a) a log that `trainer train` writes, checked against its own lines, read here
independently, and against the lr policy's formula; (b) logs in Caffe's wording, with and without
the year in glog's prefix, across midnight and new year: the exact CSV text; (c) the command lines."""
import datetime
import math
import os
import subprocess
import sys

import pytest

from conftest import BUILD, REPO, write_text

EXTRA = REPO / 'tools' / 'extra'
sys.path.insert(0, str(EXTRA))
import extract_seconds  # noqa: E402
import parse_log  # noqa: E402

# ------------------------------------------------------------------------------------------------
# (a) the trainer's log

# Gaussian data, every label 1: the net learns to answer 1, so accuracy and loss move.
NET = """
name: "tiny_log"
layer { name: "data" type: "DummyData" top: "data" top: "label"
        dummy_data_param { shape { dim: 8 dim: 4 } shape { dim: 8 }
                           data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "accuracy" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy" }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
"""
BASE_LR, GAMMA, POWER = 0.1, 0.01, 0.75
DISPLAY, TEST_INTERVAL, MAX_ITER = 10, 20, 60


def inv_rate(iteration):
    """The "inv" policy: base_lr * (1 + gamma * iter) ^ -power."""
    return BASE_LR * (1 + GAMMA * iteration) ** -POWER


def run_trainer(directory):
    """Trains NET for MAX_ITER iterations on the CPU; returns the path of its log (glog's stderr)."""
    net = write_text(directory, 'net.prototxt', NET)
    solver = write_text(directory, 'solver.prototxt', f"""
        net: "{net}"
        test_iter: 2
        test_interval: {TEST_INTERVAL}
        base_lr: {BASE_LR}
        lr_policy: "inv"
        gamma: {GAMMA}
        power: {POWER}
        momentum: 0.9
        display: {DISPLAY}
        max_iter: {MAX_ITER}
        snapshot_prefix: "{directory}/tiny"
        random_seed: 1
        solver_mode: CPU
        """)
    trainer = BUILD / 'tools' / 'trainer'
    assert trainer.exists(), f'{trainer} is not built'
    log = directory / 'tiny.log'
    with open(log, 'w') as stderr:
        run = subprocess.run([str(trainer), 'train', f'--solver={solver}'], stderr=stderr,
                             stdout=subprocess.DEVNULL, timeout=120)
    assert run.returncode == 0, log.read_text()[-3000:]
    return log


@pytest.fixture(scope='module')
def trainer_log(tmp_path_factory):
    return run_trainer(tmp_path_factory.mktemp('trainer'))


def read_log_here(path):
    """The numbers in a trainer log, read without parse_log: {side: {iteration: {'seconds': s of
    the side's first output line since "Solving", name: value}}} and {iteration: logged lr}."""
    outputs = {'Train': {}, 'Test': {}}
    rates = {}
    start = iteration = None
    for line in path.read_text().splitlines():
        prefix, _, message = line.partition('] ')
        hours, minutes, seconds = prefix.split()[1].split(':')
        now = int(hours) * 3600 + int(minutes) * 60 + float(seconds)
        if message.startswith('Solving '):
            start = now
        if start is None:
            continue
        if now < start:
            now += 24 * 3600  # the run crossed midnight
        words = message.split()
        if words and words[0] == 'Iteration':
            iteration = int(words[1].rstrip(','))
        if words[1:3] == ['net', 'output']:  # "Train net output #k: name = v (...)"
            name, _, value = message.split(': ', 1)[1].partition(' = ')
            row = outputs[words[0]].setdefault(iteration, {'seconds': now - start})
            row[name] = float(value.split()[0])
        if ', lr = ' in message:
            rates[iteration] = float(message.rsplit(' = ', 1)[1])
    return outputs, rates


def test_trainer_log_columns_and_values(trainer_log):
    train, test = parse_log.parse_log(str(trainer_log))
    outputs, _ = read_log_here(trainer_log)
    for side, rows in (('Train', train), ('Test', test)):
        expected = outputs[side]
        assert [row['NumIters'] for row in rows] == [float(it) for it in sorted(expected)]
        for row in rows:
            assert list(row) == ['NumIters', 'Seconds', 'LearningRate', 'accuracy', 'loss']
            assert isinstance(row['NumIters'], float)
            logged = expected[int(row['NumIters'])]
            assert row['accuracy'] == logged['accuracy'] and row['loss'] == logged['loss']
            assert row['Seconds'] == pytest.approx(logged['seconds'], abs=2e-6)
        seconds = [row['Seconds'] for row in rows]
        assert seconds == sorted(seconds) and seconds[0] >= 0
    assert [row['NumIters'] for row in train] == [float(it) for it in range(0, MAX_ITER, DISPLAY)]
    assert [row['NumIters'] for row in test] == [float(it) for it in range(0, MAX_ITER + 1, TEST_INTERVAL)]
    assert train[-1]['accuracy'] == 1.0 and train[-1]['loss'] < train[0]['loss']


def test_trainer_log_learning_rates_follow_the_policy(trainer_log):
    train, test = parse_log.parse_log(str(trainer_log))
    _, rates = read_log_here(trainer_log)
    for iteration, rate in rates.items():  # what the trainer logs is the policy's rate
        assert rate == pytest.approx(inv_rate(iteration), rel=1e-5)
    # A row holds the last rate logged before it: that of the display before (the rate of an
    # iteration is logged after its outputs); the first row takes the second's.
    for rows in (train, test):
        for row in rows[1:]:
            assert row['LearningRate'] == pytest.approx(inv_rate(row['NumIters'] - DISPLAY), rel=1e-5)
        assert rows[0]['LearningRate'] == rows[1]['LearningRate']
    assert len({row['LearningRate'] for row in train}) == len(train) - 1  # the rate changes


def test_trainer_log_csv_files(trainer_log, tmp_path):
    assert run_parse_log(trainer_log, tmp_path).returncode == 0
    train, test = parse_log.parse_log(str(trainer_log))
    for suffix, rows in (('.train', train), ('.test', test)):
        text = (tmp_path / (trainer_log.name + suffix)).read_bytes().decode()
        lines = text.split('\r\n')
        assert lines[0] == 'NumIters,Seconds,LearningRate,accuracy,loss' and lines[-1] == ''
        assert lines[1:-1] == [','.join(repr(value) for value in row.values()) for row in rows]


# ------------------------------------------------------------------------------------------------
# (b) logs in Caffe's own wording

# (month, day, time, message): a run from 30 December to 1 January, across two midnights.
CAFFE_LINES = [
    (12, 30, '23:59:57.500000', 'caffe.cpp:218] Using GPUs 0'),
    (12, 30, '23:59:57.750000', 'solver.cpp:279] Solving LeNet'),
    (12, 30, '23:59:57.750000', 'solver.cpp:280] Learning Rate Policy: inv'),
    (12, 30, '23:59:58.000000', 'solver.cpp:337] Iteration 0, Testing net (#0)'),
    (12, 30, '23:59:58.500000', 'solver.cpp:404]     Test net output #0: accuracy = 0.0856'),
    (12, 30, '23:59:58.500000', 'solver.cpp:404]     Test net output #1: loss = 2.3524 (* 1 = 2.3524 loss)'),
    (12, 30, '23:59:58.750000', 'solver.cpp:228] Iteration 0, loss = 2.33485'),
    (12, 30, '23:59:58.750000', 'solver.cpp:244]     Train net output #0: loss = 2.33485 (* 1 = 2.33485 loss)'),
    (12, 30, '23:59:58.750000', 'sgd_solver.cpp:106] Iteration 0, lr = 0.01'),
    (12, 31, '00:00:01.125000', 'solver.cpp:228] Iteration 100, loss = 0.2061'),
    (12, 31, '00:00:01.125000', 'solver.cpp:244]     Train net output #0: loss = 0.2061 (* 1 = 0.2061 loss)'),
    (12, 31, '00:00:01.125000', 'sgd_solver.cpp:106] Iteration 100, lr = 0.00992565'),
    (12, 31, '23:59:59.875000', 'solver.cpp:337] Iteration 200, Testing net (#0)'),
    (12, 31, '23:59:59.875000', 'solver.cpp:404]     Test net output #0: accuracy = 0.9712'),
    (12, 31, '23:59:59.875000', 'solver.cpp:404]     Test net output #1: loss = 0.0891 (* 1 = 0.0891 loss)'),
    (1, 1, '00:00:00.500000', 'solver.cpp:228] Iteration 200, loss = 0.1543'),
    (1, 1, '00:00:00.500000', 'solver.cpp:244]     Train net output #0: loss = 0.1543 (* 1 = 0.1543 loss)'),
    (1, 1, '00:00:00.500000', 'sgd_solver.cpp:106] Iteration 200, lr = 0.00985258'),
    (1, 1, '00:00:02.000000', 'solver.cpp:228] Iteration 300, loss = 0.0975'),
    (1, 1, '00:00:02.000000', 'solver.cpp:244]     Train net output #0: loss = 0.0975 (* 1 = 0.0975 loss)'),
    (1, 1, '00:00:02.000000', 'sgd_solver.cpp:106] Iteration 300, lr = 0.00978075'),
    (1, 1, '00:00:02.250000', 'solver.cpp:454] Snapshotting to binary proto file lenet_iter_300.caffemodel'),
    (1, 1, '00:00:02.500000', 'solver.cpp:337] Iteration 300, Testing net (#0)'),
    (1, 1, '00:00:02.500000', 'solver.cpp:404]     Test net output #0: accuracy = 0.9801'),
    (1, 1, '00:00:02.500000', 'solver.cpp:404]     Test net output #1: loss = 0.0632 (* 1 = 0.0632 loss)'),
    (1, 1, '00:00:02.750000', 'solver.cpp:322] Optimization Done.'),
]

# Seconds from "Solving" (30 Dec 23:59:57.75): the next midnight is 2.25 s on, the one after 86402.25 s.
CAFFE_TRAIN_CSV = ('NumIters,Seconds,LearningRate,loss\r\n'
                   '0.0,1.0,0.01,2.33485\r\n'
                   '100.0,3.375,0.01,0.2061\r\n'
                   '200.0,86402.75,0.00992565,0.1543\r\n'
                   '300.0,86404.25,0.00985258,0.0975\r\n')
# The first row's NaN rate is the second row's; the test at 300 follows the rate logged at 300.
CAFFE_TEST_CSV = ('NumIters,Seconds,LearningRate,accuracy,loss\r\n'
                  '0.0,0.75,0.00992565,0.0856,2.3524\r\n'
                  '200.0,86402.125,0.00992565,0.9712,0.0891\r\n'
                  '300.0,86404.75,0.00978075,0.9801,0.0632\r\n')
# extract_seconds: every "Iteration" line.
CAFFE_SECONDS = ['0.250000', '1.000000', '1.000000', '3.375000', '3.375000', '86402.125000', '86402.750000',
                 '86402.750000', '86404.250000', '86404.250000', '86404.750000']


def caffe_log_text(dated=False, first_year=2024, lines=CAFFE_LINES, noise=()):
    """The log as glog writes it: "I1230 23:59:57.750000  4242 solver.cpp:279] ..." or, dated, with
    the year ("I20241230 ...", the next year from January). noise: {index: text} of extra lines
    put before line index."""
    noise = dict(noise)
    out = []
    for index, (month, day, clock, message) in enumerate(lines):
        if index in noise:
            out.append(noise[index])
        year = first_year + (1 if month < lines[0][0] else 0)
        date = f'{year:04d}{month:02d}{day:02d}' if dated else f'{month:02d}{day:02d}'
        out.append(f'I{date} {clock}  4242 {message}')
    return '\n'.join(out) + '\n'


def write_caffe_log(directory, name='lenet.log', **kwargs):
    path = directory / name
    path.write_text(caffe_log_text(**kwargs))
    return path


def parsed_csv(log, tmp_path, *args):
    out = tmp_path / 'out'
    out.mkdir(exist_ok=True)
    run = run_parse_log(log, out, *args)
    assert run.returncode == 0, run.stderr
    return [(out / (log.name + suffix)).read_bytes().decode() for suffix in ('.train', '.test')]


@pytest.mark.parametrize('dated', [False, True], ids=['no_year', 'year'])
def test_caffe_log_exact_csv(tmp_path, dated):
    log = write_caffe_log(tmp_path, dated=dated)
    assert parsed_csv(log, tmp_path) == [CAFFE_TRAIN_CSV, CAFFE_TEST_CSV]


def test_caffe_log_rows(tmp_path):
    train, test = parse_log.parse_log(str(write_caffe_log(tmp_path)))
    assert [list(row) for row in train] == [['NumIters', 'Seconds', 'LearningRate', 'loss']] * 4
    assert [list(row) for row in test] == [['NumIters', 'Seconds', 'LearningRate', 'accuracy', 'loss']] * 3
    assert [row['LearningRate'] for row in train] == [0.01, 0.01, 0.00992565, 0.00985258]
    assert test[2] == {'NumIters': 300.0, 'Seconds': 86404.75, 'LearningRate': 0.00978075,
                       'accuracy': 0.9801, 'loss': 0.0632}


def test_year_in_prefix_is_the_logs_own(tmp_path):
    # 2024 is a leap year: a run across 28 February counts the 29th only with the prefix's year.
    lines = [(2, 28, '23:59:59.000000', 'solver.cpp:279] Solving LeNet'),
             (2, 28, '23:59:59.000000', 'solver.cpp:244] Iteration 0, lr = 0.1'),
             (2, 28, '23:59:59.000000', 'solver.cpp:244]     Train net output #0: loss = 2'),
             (3, 1, '00:00:01.000000', 'solver.cpp:228] Iteration 10, loss = 1'),
             (3, 1, '00:00:01.000000', 'solver.cpp:244]     Train net output #0: loss = 1')]
    log = write_caffe_log(tmp_path, dated=True, first_year=2024, lines=lines)
    train, _ = parse_log.parse_log(str(log))
    assert [row['Seconds'] for row in train] == [0.0, 86402.0]
    log = write_caffe_log(tmp_path, dated=True, first_year=2023, lines=lines)
    assert [row['Seconds'] for row in parse_log.parse_log(str(log))[0]] == [0.0, 2.0]


def test_lines_that_are_not_glog_lines_are_skipped(tmp_path):
    # Caffe's script dies on a blank line; here it, a trainer's one-line error, mpirun's chatter and
    # a rank's tagged output are skipped.
    noise = {0: 'mpirun: forwarding signal 2 to job', 4: '', 9: '   ', 13: 'trainer: error: something',
             20: '[1,0]<stderr>:some rank output', 25: 'W'}
    assert parsed_csv(write_caffe_log(tmp_path, noise=noise), tmp_path) == [CAFFE_TRAIN_CSV, CAFFE_TEST_CSV]
    # Caffe's rule, kept: a line outside glog still names the iteration of the lines after it.
    log = write_caffe_log(tmp_path, noise={16: 'Iteration 7000 without a prefix'})
    train = parse_log.parse_log(str(log))[0]
    assert [row['NumIters'] for row in train] == [0.0, 100.0, 7000.0, 300.0]


def test_without_solving_line_counts_from_the_first_glog_line(tmp_path):
    lines = CAFFE_LINES[2:]  # from "Learning Rate Policy", at the time "Solving" had
    log = write_caffe_log(tmp_path, lines=lines, noise={0: 'resumed by hand'})
    assert parsed_csv(log, tmp_path) == [CAFFE_TRAIN_CSV, CAFFE_TEST_CSV]
    assert extract_seconds.get_start_time(log.read_text().splitlines(), 2024) == \
        datetime.datetime(2024, 12, 30, 23, 59, 57, 750000)
    empty = tmp_path / 'empty.log'
    empty.write_text('no glog line here\n\n')
    assert parse_log.parse_log(str(empty)) == ([], [])
    assert extract_seconds.get_start_time(['', 'x'], 2024) is None


def test_caffe_functions():
    line = 'I1126 23:59:58.123456 25210 solver.cpp:204] Iteration 100, lr = 0.00992565'
    assert extract_seconds.extract_datetime_from_line(line, 2019) == \
        datetime.datetime(2019, 11, 26, 23, 59, 58, 123456)
    dated = 'I20261126 23:59:58.123456 25210 solver.cpp:204] Iteration 100, lr = 0.00992565'
    assert extract_seconds.extract_datetime_from_line(dated, 2019) == \
        datetime.datetime(2026, 11, 26, 23, 59, 58, 123456)
    for other in ['', 'mpirun noise', 'I1126', 'I1126 23:59:58', 'I1126 23:59.5', 'I1340 23:59:58.1']:
        with pytest.raises(ValueError):
            extract_seconds.extract_datetime_from_line(other, 2019)
    assert extract_seconds.get_start_time(
        ['I1126 10:00:00.000000 1 a] net', 'Solving without a prefix', 'I1126 10:00:02.000000 1 a] Solving x'],
        2019) == datetime.datetime(2019, 11, 26, 10, 0, 2)
    assert extract_seconds.get_log_created_year(__file__) == \
        datetime.datetime.fromtimestamp(os.path.getctime(__file__)).year

    rows = [{'LearningRate': float('nan')}, {'LearningRate': 0.5}, {'LearningRate': 0.25}]
    parse_log.fix_initial_nan_learning_rate(rows)
    assert [row['LearningRate'] for row in rows] == [0.5, 0.5, 0.25]
    alone = [{'LearningRate': float('nan')}]
    parse_log.fix_initial_nan_learning_rate(alone)
    assert math.isnan(alone[0]['LearningRate'])

    # A row goes into the list once it is as long as the first; a new iteration pushes the row as it is.
    regex = parse_log.TRAIN_OUTPUT
    rows, row = parse_log.parse_line_for_net_output(regex, None, [], 'Train net output #0: a = 1', 0.0, 0.5, 0.1)
    rows, row = parse_log.parse_line_for_net_output(regex, row, rows, 'Train net output #1: b = 2', 0.0, 0.5, 0.1)
    assert rows == [] and list(row.items()) == [('NumIters', 0.0), ('Seconds', 0.5), ('LearningRate', 0.1),
                                                ('a', 1.0), ('b', 2.0)]
    rows, row = parse_log.parse_line_for_net_output(regex, row, rows, 'Train net output #0: a = 3', 10.0, 1.5, 0.1)
    assert len(rows) == 1 and row['a'] == 3.0
    rows, row = parse_log.parse_line_for_net_output(regex, row, rows, 'Iteration 10, lr = 0.1', 10.0, 1.5, 0.1)
    assert len(rows) == 1 and row is not None
    rows, row = parse_log.parse_line_for_net_output(regex, row, rows, 'Train net output #1: b = 4e-05', 10.0, 2, 0.1)
    assert row is None and rows[1]['b'] == 4e-05


# ------------------------------------------------------------------------------------------------
# (c) the command lines

def run_parse_log(log, output_dir, *args):
    return subprocess.run([sys.executable, str(EXTRA / 'parse_log.py'), *args, str(log), str(output_dir)],
                          capture_output=True, text=True, timeout=60)


def test_files_are_named_after_the_log(tmp_path):
    (tmp_path / 'logs').mkdir()
    (tmp_path / 'csv').mkdir()
    log = write_caffe_log(tmp_path / 'logs', name='caffe.INFO')
    run = run_parse_log(log, tmp_path / 'csv', '--verbose')
    assert run.returncode == 0 and run.stderr == ''
    assert sorted(os.listdir(tmp_path / 'csv')) == ['caffe.INFO.test', 'caffe.INFO.train']
    assert run.stdout.splitlines() == [f'Wrote {tmp_path}/csv/caffe.INFO.train',
                                       f'Wrote {tmp_path}/csv/caffe.INFO.test']
    # No test rows: no .test file; --verbose says so.
    only_train = write_caffe_log(tmp_path / 'logs', name='train_only.log',
                                 lines=[line for line in CAFFE_LINES if 'Test net' not in line[3]])
    run = run_parse_log(only_train, tmp_path / 'csv', '--verbose')
    assert run.returncode == 0
    assert run.stdout.splitlines()[1] == f'Not writing {tmp_path}/csv/train_only.log.test; no lines to write'
    assert not (tmp_path / 'csv' / 'train_only.log.test').exists()
    assert run_parse_log(only_train, tmp_path / 'csv').stdout == ''


@pytest.mark.parametrize('delimiter, written', [(';', ';'), (' ', ' '), ('\t', '\t'), ('\\t', '\t')])
def test_delimiter(tmp_path, delimiter, written):
    log = write_caffe_log(tmp_path)
    train, test = parsed_csv(log, tmp_path, '--delimiter', delimiter)
    assert train == CAFFE_TRAIN_CSV.replace(',', written) and test == CAFFE_TEST_CSV.replace(',', written)


def test_errors_are_one_line(tmp_path):
    run = run_parse_log(tmp_path / 'missing.log', tmp_path)
    assert run.returncode == 1 and run.stdout == ''
    assert run.stderr.splitlines() == [f'parse_log.py: cannot read {tmp_path}/missing.log: No such file or directory']
    run = run_parse_log(write_caffe_log(tmp_path), tmp_path / 'no_such_dir')
    assert run.returncode == 1 and len(run.stderr.splitlines()) == 1 and 'no_such_dir' in run.stderr
    run = run_parse_log(tmp_path, tmp_path)  # a directory
    assert run.returncode == 1 and len(run.stderr.splitlines()) == 1
    run = run_parse_log(write_caffe_log(tmp_path), tmp_path, '--delimiter', ';;')
    assert run.returncode == 2 and 'delimiter' in run.stderr and 'Traceback' not in run.stderr


def test_extract_seconds_command(tmp_path):
    script = str(EXTRA / 'extract_seconds.py')
    for dated in (False, True):
        log = write_caffe_log(tmp_path, dated=dated, noise={5: ''})
        run = subprocess.run([sys.executable, script, str(log), str(tmp_path / 'seconds.txt')],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        assert (tmp_path / 'seconds.txt').read_text().splitlines() == CAFFE_SECONDS
    run = subprocess.run([sys.executable, script, str(tmp_path / 'missing.log'), str(tmp_path / 'x')],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and len(run.stderr.splitlines()) == 1 and 'missing.log' in run.stderr
    run = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and 'Usage: extract_seconds.py INPUT OUTPUT' in run.stderr


# ------------------------------------------------------------------------------------------------
# (d) mistakes: one line naming what to fix, exit status 1 (2 for the command line), nothing written

NOT_TRAINING_LOGS = {
    'empty.log': ('', 'the file is empty'),
    'notes.txt': ('hello\nthis is not a log\n', 'no glog line: it is not a log of `trainer train` or Caffe'),
    'binary.log': (bytes(range(256)) * 8, 'no glog line: it is not a log of `trainer train` or Caffe'),
    # A run that stopped before its first display or test: glog lines, no outputs.
    'setup_failed.log': ('I1230 10:00:00.000000  1 net.cpp:65] Initializing net\n'
                         'I1230 10:00:01.000000  1 solver.cpp:279] Solving LeNet\n'
                         'trainer: error: lenet.prototxt: layer data (Data): cannot open LMDB\n',
                         'no "Train net output" or "Test net output" line after an "Iteration" line'),
}


def write_not_training_log(directory, name):
    text, _ = NOT_TRAINING_LOGS[name]
    path = directory / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


@pytest.mark.parametrize('name', sorted(NOT_TRAINING_LOGS))
def test_a_log_without_training_lines_is_one_line_and_exit_1(tmp_path, name):
    log = write_not_training_log(tmp_path, name)
    out = tmp_path / 'out'
    out.mkdir()
    run = run_parse_log(log, out)
    assert run.returncode == 1 and run.stdout == ''
    assert run.stderr.splitlines() == [f'parse_log.py: {log} holds no training lines ({NOT_TRAINING_LOGS[name][1]})']
    assert os.listdir(out) == []
    # extract_seconds.py says the same of it, and writes nothing either.
    seconds = out / 'seconds.txt'
    run = subprocess.run([sys.executable, str(EXTRA / 'extract_seconds.py'), str(log), str(seconds)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and len(run.stderr.splitlines()) == 1, run.stderr
    assert run.stderr.startswith(f'extract_seconds.py: {log} holds no training lines (')
    assert 'Traceback' not in run.stderr and not seconds.exists()


def test_output_dir_mistakes_name_the_folder(tmp_path):
    log = write_caffe_log(tmp_path)
    run = run_parse_log(log, tmp_path / 'no_such_dir')
    assert run.returncode == 1 and run.stderr.splitlines() == [
        f'parse_log.py: output directory {tmp_path}/no_such_dir does not exist (create it first)']
    run = run_parse_log(log, log)  # a file
    assert run.returncode == 1 and run.stderr.splitlines() == [
        f'parse_log.py: output directory {log} is not a directory']
    assert not (tmp_path / 'no_such_dir').exists()


def test_both_tables_or_neither(tmp_path):
    log = write_caffe_log(tmp_path)
    out = tmp_path / 'out'
    out.mkdir()
    (out / 'lenet.log.train').write_text('an earlier table\n')
    (out / 'lenet.log.test').mkdir()  # the .test table cannot be written
    run = run_parse_log(log, out)
    assert run.returncode == 1 and run.stderr.splitlines() == [
        f'parse_log.py: cannot write {out}/lenet.log.test: Is a directory']
    assert (out / 'lenet.log.train').read_text() == 'an earlier table\n'  # not replaced by half a result
    assert sorted(os.listdir(out)) == ['lenet.log.test', 'lenet.log.train']  # no temporary left
    (out / 'lenet.log.test').rmdir()
    assert parsed_csv(log, tmp_path) == [CAFFE_TRAIN_CSV, CAFFE_TEST_CSV]
    assert sorted(os.listdir(out)) == ['lenet.log.test', 'lenet.log.train']
    assert oct((out / 'lenet.log.train').stat().st_mode & 0o777) == oct(0o666 & ~current_umask())


def current_umask():
    umask = os.umask(0)
    os.umask(umask)
    return umask


@pytest.mark.parametrize('args', [[], ['only.log'], ['--bogus', 'a.log', 'out'], ['--delimiter', '', 'a.log', 'out']])
def test_command_line_mistakes_are_one_line_with_the_usage(args):
    run = subprocess.run([sys.executable, str(EXTRA / 'parse_log.py'), *args], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2 and len(run.stderr.splitlines()) == 1, run.stderr
    assert run.stderr.startswith('parse_log.py: error: ')
    assert '(usage: parse_log.py [-h] [--verbose] [--delimiter DELIMITER] LOGFILE OUTPUT_DIR)' in run.stderr


def test_extract_seconds_mistakes(tmp_path):
    script = str(EXTRA / 'extract_seconds.py')
    log = write_caffe_log(tmp_path)
    old = tmp_path / 'seconds.txt'
    old.write_text('earlier\n')

    def run(*args):
        return subprocess.run([sys.executable, script, *map(str, args)], capture_output=True, text=True, timeout=60)
    for args, message in [
            ((log, tmp_path / 'no_dir' / 's.txt'),
             f'extract_seconds.py: {tmp_path}/no_dir/s.txt: No such file or directory'),
            ((log, tmp_path), f'extract_seconds.py: {tmp_path}: Is a directory'),
            ((tmp_path, old), f'extract_seconds.py: {tmp_path}: Is a directory'),
            ((log, old, 'extra'), 'Usage: extract_seconds.py INPUT OUTPUT (writes the seconds since the solver '
                                  'started of each "Iteration" line of the log INPUT)')]:
        result = run(*args)
        assert result.returncode == 1 and result.stderr.splitlines() == [message]
    assert old.read_text() == 'earlier\n'
    assert sorted(os.listdir(tmp_path)) == ['lenet.log', 'seconds.txt']
    assert run(log, old).returncode == 0 and old.read_text().splitlines() == CAFFE_SECONDS
