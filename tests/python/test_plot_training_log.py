"""test_plot_training_log.py: tools/extra/plot_training_log.py, Caffe's log plotter in Python 3:
every chart type draws an image from a trainer's log and from logs in Caffe's wording, the points
drawn are parse_log's values, --field, the usage and the one-line errors."""
import errno
import os
import struct
import subprocess
import sys

import pytest

matplotlib = pytest.importorskip('matplotlib')
import matplotlib.axes  # noqa: E402

from test_parse_log import CAFFE_LINES, EXTRA, run_trainer, write_caffe_log

import parse_log  # noqa: E402 (tools/extra is on sys.path through test_parse_log)
import plot_training_log  # noqa: E402

PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'
WIDTH, HEIGHT = 800, 600  # plot_training_log's 8 x 6 inches at 100 dpi


@pytest.fixture(scope='module')
def logs(tmp_path_factory):
    """A trainer's log and Caffe-worded ones without and with the year in the prefix."""
    directory = tmp_path_factory.mktemp('logs')
    return [run_trainer(directory), write_caffe_log(directory, name='caffe.INFO'),
            write_caffe_log(directory, name='dated.log', dated=True)]


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b'IHDR'
    return struct.unpack('>II', data[16:24])


def run_plot(*args):
    return subprocess.run([sys.executable, str(EXTRA / 'plot_training_log.py'), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def expected_series(chart_type, log, column):
    train, test = parse_log.parse_log(str(log))
    rows = train if chart_type >= 4 else test
    x = 'NumIters' if chart_type % 2 == 0 else 'Seconds'
    return [row[x] for row in rows], [row[column] for row in rows]


# The column that each chart type plots for these logs (4, 5: the learning rate).
COLUMNS = ['accuracy', 'accuracy', 'loss', 'loss', 'LearningRate', 'LearningRate', 'loss', 'loss']


def test_chart_types():
    assert plot_training_log.get_supported_chart_types() == [
        'Test accuracy vs. Iters', 'Test accuracy vs. Seconds', 'Test loss vs. Iters', 'Test loss vs. Seconds',
        'Train learning rate vs. Iters', 'Train learning rate vs. Seconds', 'Train loss vs. Iters',
        'Train loss vs. Seconds']


@pytest.mark.parametrize('chart_type', range(8))
def test_every_chart_type_draws_parse_logs_values(logs, tmp_path, chart_type, monkeypatch):
    drawn = []
    real_plot = matplotlib.axes.Axes.plot

    def recording_plot(axes, xs, ys, **kwargs):
        drawn.append((list(xs), list(ys), kwargs['label']))
        return real_plot(axes, xs, ys, **kwargs)
    monkeypatch.setattr(matplotlib.axes.Axes, 'plot', recording_plot)

    out = tmp_path / f'chart{chart_type}.png'
    plot_training_log.plot_chart(chart_type, str(out), [str(log) for log in logs])
    assert png_size(out) == (WIDTH, HEIGHT) and out.stat().st_size > 10000
    assert [label for _, _, label in drawn] == ['tiny', 'caffe.INFO', 'dated']
    for log, (xs, ys, _) in zip(logs, drawn):
        expected = expected_series(chart_type, log, COLUMNS[chart_type])
        assert (xs, ys) == expected and len(xs) >= 3
        assert plot_training_log.chart_series(chart_type, str(log)) == (*expected, COLUMNS[chart_type])


def test_command_line(logs, tmp_path):
    run = run_plot(0, tmp_path / 'accuracy.png', *logs)
    assert run.returncode == 0, run.stderr
    assert png_size(tmp_path / 'accuracy.png') == (WIDTH, HEIGHT)
    run = run_plot(7, tmp_path / 'loss.svg', logs[1])  # the format follows the extension
    assert run.returncode == 0, run.stderr
    assert b'<svg' in (tmp_path / 'loss.svg').read_bytes()[:1000]


def test_usage_on_wrong_arguments(logs, tmp_path):
    for args in [(), (0, tmp_path / 'x.png'), (8, tmp_path / 'x.png', logs[0]), ('loss', tmp_path / 'x.png', logs[0])]:
        run = run_plot(*args)
        assert run.returncode == 1 and len(run.stderr.splitlines()) == 1
        assert 'Usage: plot_training_log.py' in run.stdout
        for index, description in enumerate(plot_training_log.get_supported_chart_types()):
            assert f'    {index}: {description}' in run.stdout
    assert plot_training_log.main(['--help']) == 0


def test_field(logs, tmp_path):
    trainer_log, caffe_log, _ = logs
    train, test = parse_log.parse_log(str(trainer_log))
    assert plot_training_log.chart_series(6, str(trainer_log), field='accuracy') == (
        [row['NumIters'] for row in train], [row['accuracy'] for row in train], 'accuracy')
    assert plot_training_log.chart_series(3, str(trainer_log), field='LearningRate')[:2] == (
        [row['Seconds'] for row in test], [row['LearningRate'] for row in test])
    assert plot_training_log.get_chart_type_description(6, 'accuracy') == 'Train accuracy vs. Iters'
    run = run_plot('--field', 'accuracy', 6, tmp_path / 'train_accuracy.png', trainer_log)
    assert run.returncode == 0, run.stderr
    assert png_size(tmp_path / 'train_accuracy.png') == (WIDTH, HEIGHT)
    # Caffe's logs have no train accuracy: one line naming the log and the field.
    run = run_plot('--field=accuracy', 6, tmp_path / 'no.png', caffe_log)
    assert run.returncode == 1 and run.stderr.splitlines() == [
        f'plot_training_log.py: {caffe_log} has no train output named "accuracy"']
    assert not (tmp_path / 'no.png').exists()


def test_which_output_is_accuracy_and_loss(tmp_path):
    def log_with(name, train_names, test_names):
        lines = list(CAFFE_LINES[:4])
        for iteration in (0, 100):
            lines.append((12, 30, '23:59:58.000000', f'solver.cpp:1] Iteration {iteration}, loss = 1'))
            lines += [(12, 30, '23:59:58.000000', f'solver.cpp:1]     Train net output #{k}: {n} = {k + 1}')
                      for k, n in enumerate(train_names)]
            lines += [(12, 30, '23:59:58.000000', f'solver.cpp:1]     Test net output #{k}: {n} = {k + 1}')
                      for k, n in enumerate(test_names)]
        return str(write_caffe_log(tmp_path, name=name, lines=lines))
    log = log_with('a.log', ['aux_loss', 'loss'], ['top5_accuracy', 'accuracy'])
    assert plot_training_log.chart_series(6, log)[1:] == ([2.0, 2.0], 'loss')        # "loss" itself first
    assert plot_training_log.chart_series(0, log)[1:] == ([1.0, 1.0], 'top5_accuracy')  # the first "accuracy"
    log = log_with('b.log', ['loss_bbox', 'loss_cls'], ['mAP'])
    assert plot_training_log.chart_series(7, log)[1:] == ([1.0, 1.0], 'loss_bbox')   # else the first "loss"
    with pytest.raises(plot_training_log.PlotError, match='has no test output containing "accuracy"'):
        plot_training_log.chart_series(0, log)
    run = run_plot(2, tmp_path / 'x.png', log)
    assert run.returncode == 1 and run.stderr.splitlines() == [
        f'plot_training_log.py: {log} has no test output containing "loss"']
    run = run_plot(2, tmp_path / 'x.png', tmp_path / 'missing.log')
    assert run.returncode == 1 and len(run.stderr.splitlines()) == 1 and 'missing.log' in run.stderr
    run = run_plot(2, tmp_path / 'x.unknown', log)
    assert run.returncode == 1 and len(run.stderr.splitlines()) == 1 and '.unknown' in run.stderr


def test_labels():
    assert plot_training_log.get_data_label('/runs/lenet.log') == 'lenet'
    assert plot_training_log.get_data_label('runs/caffe.INFO') == 'caffe.INFO'
    assert plot_training_log.get_data_label('.log') == '.log'


def test_a_log_without_training_lines_is_one_line_and_nothing_is_drawn(tmp_path):
    old = tmp_path / 'old.png'
    old.write_bytes(b'an earlier image')
    for name, text, why in [('empty.log', '', 'the file is empty'),
                            ('notes.txt', 'not a log\n', 'no glog line: it is not a log of `trainer train` or Caffe')]:
        log = tmp_path / name
        log.write_text(text)
        for chart_type in (0, 6):
            run = run_plot(chart_type, old, log)
            assert run.returncode == 1 and run.stderr.splitlines() == [
                f'plot_training_log.py: {log} holds no training lines ({why})']
    assert old.read_bytes() == b'an earlier image'


def test_a_failed_write_leaves_the_old_image(logs, tmp_path, monkeypatch):
    old = tmp_path / 'chart.png'
    old.write_bytes(b'an earlier image')

    def failing_savefig(figure, target, **kwargs):  # half an image, then a full disk
        if isinstance(target, (str, os.PathLike)):
            with open(target, 'wb') as f:
                f.write(b'half')
        else:
            target.write(b'half')
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(plot_training_log.Figure, 'savefig', failing_savefig)
    with pytest.raises(OSError):
        plot_training_log.plot_chart(6, str(old), [str(logs[1])])
    assert old.read_bytes() == b'an earlier image'
    assert os.listdir(tmp_path) == ['chart.png']


def test_without_matplotlib_one_line_says_what_to_install(logs, tmp_path):
    # -S: without site-packages, where matplotlib is installed.
    run = subprocess.run([sys.executable, '-S', str(EXTRA / 'plot_training_log.py'), '6', str(tmp_path / 'x.png'),
                          str(logs[1])], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and len(run.stderr.splitlines()) == 1, run.stderr
    assert run.stderr.startswith('plot_training_log.py: this script needs matplotlib (')
    assert 'install python3-matplotlib (scripts/install_deps.sh)' in run.stderr
    assert not (tmp_path / 'x.png').exists()
