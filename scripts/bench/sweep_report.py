#!/usr/bin/python3
"""sweep_report.py — the plot and the summary of a sweep.sh CSV.

Usage: sweep_report.py SWEEP.csv OUT.png

OUT.png: images/s against batch size (log-2 axis), one line per net, device and thread count.
stdout: the best configuration of each net (the highest images/s), one line each:
    lenet: GPU0, 1 thread, batch 256: 51234.5 img/s (forward-backward 5.00 ms)
Rows whose status is not "ok" are left out of both. OUT.png is written whole or not at all. A CSV
that cannot be read, is not a sweep's or has no "ok" row, and an OUT.png that cannot be written, are
one line on stderr and exit status 1.
"""
import csv
import os
import sys
from collections import defaultdict

# tools/extra/atomic_file.py: files written whole or not at all.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools', 'extra'))
import atomic_file  # noqa: E402

try:
    import matplotlib
except ImportError as missing:
    if __name__ == '__main__':
        sys.exit(f'sweep_report.py: this script needs matplotlib ({missing}): install python3-matplotlib '
                 '(scripts/install_deps.sh)')
    raise

matplotlib.use('Agg')
import matplotlib.ticker  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)


COLUMNS = ('net', 'device', 'threads', 'batch_size', 'iterations', 'forward_ms', 'backward_ms',
           'forward_backward_ms', 'images_per_s', 'status')
NUMBERS = {'threads': int, 'batch_size': int, 'images_per_s': float, 'forward_backward_ms': float}


def read_rows(path):
    """The "ok" rows of a sweep CSV; ValueError naming the line where it is not one."""
    with open(path, newline='') as f:
        reader = csv.DictReader(f)
        missing = [column for column in COLUMNS if column not in (reader.fieldnames or [])]
        if missing:
            raise ValueError('not a sweep.sh CSV (%s)' % (
                'it is empty' if reader.fieldnames is None else 'no column "%s"' % missing[0]))
        rows = [row for row in reader if row['status'] == 'ok']
    for row in rows:
        for column, kind in NUMBERS.items():
            try:
                kind(row[column])
            except (TypeError, ValueError):
                raise ValueError('the row of %s, %s, batch %s: %s is %r, not a number' % (
                    row['net'], row['device'], row['batch_size'], column, row[column])) from None
    return rows


def series(rows):
    """{(net, device, threads): [(batch, images/s), ...] sorted by batch}."""
    lines = defaultdict(list)
    for row in rows:
        lines[(row['net'], row['device'], int(row['threads']))].append(
            (int(row['batch_size']), float(row['images_per_s'])))
    return {key: sorted(points) for key, points in lines.items()}


def best(rows):
    """{net: the row with the highest images/s}, nets in the CSV's order."""
    top = {}
    for row in rows:
        if row['net'] not in top or float(row['images_per_s']) > float(top[row['net']]['images_per_s']):
            top[row['net']] = row
    return top


def plot(lines, path):
    fig, ax = plt.subplots(figsize=(8, 5))
    for (net, device, threads), points in sorted(lines.items()):
        label = f'{net}, {device}' + ('' if device.startswith('GPU') else
                                      f', {threads} thread' + ('s' if threads > 1 else ''))
        ax.plot([b for b, _ in points], [r for _, r in points], marker='o', label=label)
    ax.set_xscale('log', base=2)
    batches = sorted({b for points in lines.values() for b, _ in points})
    ax.set_xticks(batches, [str(b) for b in batches])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_yscale('log')  # plain numbers at 1, 2 and 5 times the powers of ten
    ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f'{value:g}'))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel('batch size')
    ax.set_ylabel('images/s (training: forward + backward)')
    ax.set_title('Cortado training throughput (trainer time)')
    ax.grid(True, which='both', alpha=0.3)
    ax.legend(fontsize='small')
    fig.tight_layout()
    try:
        with atomic_file.replacing(path, 'wb') as f:
            fig.savefig(f, dpi=80, format='png')
    finally:
        plt.close(fig)


def main(argv):
    if len(argv) != 3:
        sys.exit('usage: sweep_report.py SWEEP.csv OUT.png')
    if not argv[2].lower().endswith('.png'):
        sys.exit(f'sweep_report.py: {argv[2]}: the plot is a PNG: give a name ending in .png')
    try:
        rows = read_rows(argv[1])
    except OSError as e:
        sys.exit(f'sweep_report.py: cannot read {argv[1]}: {e.strerror}')
    except (ValueError, csv.Error) as e:  # UnicodeDecodeError is a ValueError
        sys.exit(f'sweep_report.py: cannot read {argv[1]}: {e}')
    if not rows:
        sys.exit(f'sweep_report.py: {argv[1]} has no successful configuration')
    try:
        plot(series(rows), argv[2])
    except OSError as e:
        sys.exit(f'sweep_report.py: cannot write {argv[2]}: {e.strerror}')
    for net, row in best(rows).items():
        threads = int(row['threads'])
        print(f"{net}: {row['device']}, {threads} thread{'s' if threads > 1 else ''}, batch {row['batch_size']}: "
              f"{float(row['images_per_s']):.1f} img/s (forward-backward {float(row['forward_backward_ms']):.2f} ms)")


if __name__ == '__main__':
    main(sys.argv)
