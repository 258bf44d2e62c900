#!/usr/bin/env python3
"""plot_training_log.py: plots a quantity from one or more training logs, one line per log.

    plot_training_log.py [--field NAME] CHART_TYPE OUT.png LOG [LOG...]

CHART_TYPE is one of the chart types that Caffe's plot_training_log.py.example offered (the usage
lists them); the logs are read with parse_log.py's parser, OUT's extension picks the image format
(.png, .pdf, .svg, ...), and the image is drawn without a display (matplotlib's Agg backend).
--field NAME plots the train or test output NAME (the chart type's side and x axis) instead.

The image is written whole or not at all (atomic_file.py). A wrong command line, a log without the
lines to plot, an image format matplotlib cannot write and a missing matplotlib are each one line on
stderr (the usage follows on stdout for a wrong command line) and exit status 1.
"""
import os
import sys

try:
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # Agg: draws without a display
    from matplotlib.figure import Figure
except ImportError as missing:
    if __name__ == '__main__':
        sys.exit('plot_training_log.py: this script needs matplotlib (%s): install python3-matplotlib '
                 '(scripts/install_deps.sh)' % missing)
    raise

import atomic_file  # these two beside this script, as Caffe's tools/extra scripts import each other
import parse_log

# (side of the log, quantity, x axis), in the order of Caffe's chart types.
CHART_TYPES = [
    ('Test', 'accuracy', 'Iters'),
    ('Test', 'accuracy', 'Seconds'),
    ('Test', 'loss', 'Iters'),
    ('Test', 'loss', 'Seconds'),
    ('Train', 'learning rate', 'Iters'),
    ('Train', 'learning rate', 'Seconds'),
    ('Train', 'loss', 'Iters'),
    ('Train', 'loss', 'Seconds'),
]
X_COLUMNS = {'Iters': 'NumIters', 'Seconds': 'Seconds'}
MARKERS = 'os^vD*xp+h'
FIGURE_SIZE = (8, 6)   # inches, at DPI: 800 x 600 pixels
DPI = 100


class PlotError(Exception):
    """A log or argument that cannot be plotted; main prints it as one line."""


def get_supported_chart_types():
    """The chart types' descriptions, e.g. "Test accuracy vs. Iters", indexed by chart type."""
    return ['%s %s vs. %s' % chart for chart in CHART_TYPES]


def get_chart_type_description(chart_type, field=None):
    side, quantity, x_axis = CHART_TYPES[chart_type]
    return '%s %s vs. %s' % (side, field or quantity, x_axis)


def is_valid_chart_type(chart_type):
    return 0 <= chart_type < len(CHART_TYPES)


def get_data_label(path_to_log):
    """The legend's name for a log: its file name, less a ".log" ending."""
    name = os.path.basename(path_to_log)
    return name[:-len('.log')] if name.endswith('.log') and len(name) > len('.log') else name


def _columns(rows):
    names = []
    for row in rows:
        names.extend(key for key in row if key not in names)
    return names


def _pick_column(rows, quantity, side, path_to_log):
    names = _columns(rows)
    if quantity == 'learning rate':
        candidates = ['LearningRate'] if 'LearningRate' in names else []
    else:
        outputs = [name for name in names if name not in ('NumIters', 'Seconds', 'LearningRate')]
        exact = [name for name in outputs if name == quantity] if quantity == 'loss' else []
        candidates = exact or [name for name in outputs if quantity in name]
    if not candidates:
        what = 'net output lines' if not rows else 'output containing "%s"' % quantity
        raise PlotError('%s has no %s %s' % (path_to_log, side.lower(), what))
    return candidates[0]


def chart_series(chart_type, path_to_log, field=None):
    """(xs, ys, column): the points that chart_type plots for one log (rows without the column are
    left out); column is the parse_log column plotted, `field` when one is given."""
    side, quantity, x_axis = CHART_TYPES[chart_type]
    train_rows, test_rows = parse_log.parse_log(path_to_log)
    if not train_rows and not test_rows:
        raise PlotError(parse_log.no_training_lines(path_to_log))
    rows = train_rows if side == 'Train' else test_rows
    if field is not None:
        if field not in _columns(rows):
            raise PlotError('%s has no %s output named "%s"' % (path_to_log, side.lower(), field))
        column = field
    else:
        column = _pick_column(rows, quantity, side, path_to_log)
    x_column = X_COLUMNS[x_axis]
    points = [(row[x_column], row[column]) for row in rows if column in row]
    return [x for x, _ in points], [y for _, y in points], column


def plot_chart(chart_type, path_to_png, path_to_log_list, field=None):
    """Draws chart_type for every log into the image path_to_png (its extension gives the format)."""
    _, quantity, x_axis = CHART_TYPES[chart_type]
    figure = Figure(figsize=FIGURE_SIZE, dpi=DPI)
    canvas = FigureCanvasAgg(figure)
    image_format = os.path.splitext(path_to_png)[1][1:].lower() or 'png'
    if image_format not in canvas.get_supported_filetypes():
        raise PlotError('cannot write a .%s image (%s); use one of: %s' % (
            image_format, path_to_png, ', '.join(sorted(canvas.get_supported_filetypes()))))
    axes = figure.add_subplot(1, 1, 1)
    for index, path_to_log in enumerate(path_to_log_list):
        xs, ys, _ = chart_series(chart_type, path_to_log, field)
        axes.plot(xs, ys, label=get_data_label(path_to_log), marker=MARKERS[index % len(MARKERS)],
                  linewidth=0.75, markersize=4)
    rising = field is None and quantity == 'accuracy'
    axes.legend(loc='lower right' if rising else 'upper right', ncol=1)
    description = get_chart_type_description(chart_type, field)
    axes.set_title(description)
    axes.set_xlabel(x_axis)
    axes.set_ylabel(description.split(' vs. ')[0])
    axes.grid(True, alpha=0.3)
    with atomic_file.replacing(path_to_png, 'wb') as f:
        figure.savefig(f, format=image_format)


def usage():
    lines = ['Usage: plot_training_log.py [--field NAME] CHART_TYPE[0-%d] OUT.png LOG [LOG...]'
             % (len(CHART_TYPES) - 1),
             'Plots a quantity from training logs (as `trainer train` or Caffe writes them), one line',
             'per log, labelled with the log\'s file name; OUT\'s extension picks the image format.',
             '  --field NAME  plot the train or test output NAME (the side and x axis of CHART_TYPE)',
             '                instead of the chart type\'s own quantity',
             'Supported chart types:']
    lines += ['    %d: %s' % item for item in enumerate(get_supported_chart_types())]
    return '\n'.join(lines)


def parse_arguments(argv):
    """(chart_type, out_path, logs, field) from the command line; PlotError where it is wrong."""
    field = None
    positional = []
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == '--field':
            if not args:
                raise PlotError('--field needs a NAME')
            field = args.pop(0)
        elif arg.startswith('--field='):
            field = arg[len('--field='):]
        elif arg == '--':
            positional += args
            break
        elif arg.startswith('-') and not arg.lstrip('-').isdigit():
            raise PlotError('unknown option %s' % arg)
        else:
            positional.append(arg)
    if field == '':
        raise PlotError('--field needs a NAME')
    if len(positional) < 3:
        raise PlotError('expected CHART_TYPE OUT.png LOG [LOG...]')
    try:
        chart_type = int(positional[0])
    except ValueError:
        chart_type = -1
    if not is_valid_chart_type(chart_type):
        raise PlotError('%s is not a valid chart type' % positional[0])
    return chart_type, positional[1], positional[2:], field


def main(argv):
    if any(arg in ('-h', '--help') for arg in argv):
        print(usage())
        return 0
    try:
        chart_type, path_to_png, logs, field = parse_arguments(argv)
    except PlotError as error:
        print('plot_training_log.py: %s' % error, file=sys.stderr)
        print(usage())
        return 1
    try:
        for path_to_log in logs:
            if not os.path.isfile(path_to_log):
                raise PlotError('cannot read %s: %s' % (
                    path_to_log, 'Is a directory' if os.path.isdir(path_to_log) else 'No such file'))
        plot_chart(chart_type, path_to_png, logs, field)
    except PlotError as error:
        print('plot_training_log.py: %s' % error, file=sys.stderr)
        return 1
    except OSError as error:
        print('plot_training_log.py: %s: %s' % (error.filename or path_to_png, error.strerror or error),
              file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
