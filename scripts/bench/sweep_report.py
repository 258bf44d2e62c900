#!/usr/bin/python3
"""sweep_report.py — the plot and the summary of a sweep.sh CSV.

Usage: sweep_report.py SWEEP.csv OUT.png

OUT.png: images/s against batch size (log-2 axis), one line per net, device and thread count.
stdout: the best configuration of each net (the highest images/s), one line each:
    lenet: GPU0, 1 thread, batch 256: 51234.5 img/s (forward-backward 5.00 ms)
Rows whose status is not "ok" are left out of both.
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use('Agg')
import matplotlib.ticker  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)


def read_rows(path):
    with open(path, newline='') as f:
        return [row for row in csv.DictReader(f) if row['status'] == 'ok']


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
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main(argv):
    if len(argv) != 3:
        sys.exit('usage: sweep_report.py SWEEP.csv OUT.png')
    try:
        rows = read_rows(argv[1])
    except (OSError, KeyError, csv.Error) as e:
        sys.exit(f'sweep_report.py: cannot read {argv[1]}: {e}')
    if not rows:
        sys.exit(f'sweep_report.py: {argv[1]} has no successful configuration')
    plot(series(rows), argv[2])
    for net, row in best(rows).items():
        threads = int(row['threads'])
        print(f"{net}: {row['device']}, {threads} thread{'s' if threads > 1 else ''}, batch {row['batch_size']}: "
              f"{float(row['images_per_s']):.1f} img/s (forward-backward {float(row['forward_backward_ms']):.2f} ms)")


if __name__ == '__main__':
    main(sys.argv)
