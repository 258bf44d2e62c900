#!/usr/bin/env python3
"""parse_log.py: a training log (`trainer train`'s, or Caffe's) as two CSV tables.

    parse_log.py [--verbose] [--delimiter D] LOGFILE OUTPUT_DIR

writes OUTPUT_DIR/<basename of LOGFILE>.train and .test, one row per displayed training iteration
and per test pass: NumIters, Seconds (since the solver's "Solving" line), LearningRate (the last
"lr = " logged before the row), then the net's outputs in the order the log gives them. The output
is byte for byte that of Caffe's tools/extra/parse_log.py, of which this is the Python 3 successor,
with the same module functions; unlike it, this one skips lines that are not glog lines, reads
prefixes that carry the year, and counts from the first glog line of a log without a "Solving" line.

Both files are written whole or not at all (atomic_file.py). A log without a single row (empty, not a
glog log, or a run that stopped before its first display or test) is an error: one line on stderr and
exit status 1, as are a log or OUTPUT_DIR that cannot be read or written; a wrong command line is one
line and exit status 2.
"""
import argparse
import contextlib
import csv
import os
import re
import sys
from collections import OrderedDict

import atomic_file
import extract_seconds

# The log lines that make the tables (see the "Log lines that scripts parse" in caffe-compat.md).
ITERATION = re.compile(r'Iteration (\d+)')
TRAIN_OUTPUT = re.compile(r'Train net output #(\d+): (\S+) = ([.\deE+-]+)')
TEST_OUTPUT = re.compile(r'Test net output #(\d+): (\S+) = ([.\deE+-]+)')
LEARNING_RATE = re.compile(r'lr = ([-+]?[0-9]*\.?[0-9]+([eE]?[-+]?[0-9]+)?)')

# Logs and tables are read and written as UTF-8, any other byte passing through unchanged.
ENCODING = dict(encoding='utf-8', errors='surrogateescape')


def parse_log(path_to_log):
    """Reads a training log; returns (train_dict_list, test_dict_list), each a list of rows
    (OrderedDicts: NumIters, Seconds, LearningRate, then the outputs by name)."""
    year = extract_seconds.get_log_created_year(path_to_log)
    train_dict_list, test_dict_list = [], []
    train_row = test_row = None
    iteration = None
    learning_rate = float('nan')
    with open(path_to_log, **ENCODING) as f:
        start, found = extract_seconds.find_start(f, year)
        if start is None:
            return train_dict_list, test_dict_list
        if not found:
            f.seek(0)  # no "Solving" line: every line counts, from the first glog line's time
        clock = extract_seconds.LogClock(year, start)
        for line in f:
            match = ITERATION.search(line)
            if match:
                iteration = float(match.group(1))
            if iteration is None:
                continue  # nothing is recorded before the first iteration
            try:
                seconds = (clock.read(line) - start).total_seconds()
            except ValueError:
                continue  # not a glog line
            match = LEARNING_RATE.search(line)
            if match:
                try:
                    learning_rate = float(match.group(1))
                except ValueError:
                    pass
            train_dict_list, train_row = parse_line_for_net_output(
                TRAIN_OUTPUT, train_row, train_dict_list, line, iteration, seconds, learning_rate)
            test_dict_list, test_row = parse_line_for_net_output(
                TEST_OUTPUT, test_row, test_dict_list, line, iteration, seconds, learning_rate)
    fix_initial_nan_learning_rate(train_dict_list)
    fix_initial_nan_learning_rate(test_dict_list)
    return train_dict_list, test_dict_list


def parse_line_for_net_output(regex_obj, row, row_dict_list, line, iteration, seconds, learning_rate):
    """Adds the output that regex_obj finds in line (if any) to the row being filled; returns
    (row_dict_list, row), row being None once it has gone into the list.

    A new iteration starts a new row (the unfinished one goes into the list as it is); a row goes
    into the list as soon as it has as many columns as the list's first row.
    """
    match = regex_obj.search(line)
    value = None
    if match:
        try:
            value = float(match.group(3))
        except ValueError:  # e.g. "-nan": the pattern takes the "-" alone
            match = None
    if match:
        if not row or row['NumIters'] != iteration:
            if row:
                row_dict_list.append(row)
            row = OrderedDict([('NumIters', iteration), ('Seconds', seconds), ('LearningRate', learning_rate)])
        row[match.group(2)] = value
    if row and row_dict_list and len(row) == len(row_dict_list[0]):
        row_dict_list.append(row)
        row = None
    return row_dict_list, row


def fix_initial_nan_learning_rate(dict_list):
    """Gives the first row the second row's learning rate.

    The rate is logged after the first test and display, so the first rows would have NaN; as in
    Caffe, the first row takes the second's rate whatever it held.
    """
    if len(dict_list) > 1:
        dict_list[0]['LearningRate'] = dict_list[1]['LearningRate']


def no_training_lines(path_to_log):
    """The error for a log that gave no row: "<log> holds no training lines (why)"."""
    if os.path.getsize(path_to_log) == 0:
        why = 'the file is empty'
    else:
        with open(path_to_log, **ENCODING) as f:
            start, _ = extract_seconds.find_start(f, extract_seconds.get_log_created_year(path_to_log))
        why = ('no glog line: it is not a log of `trainer train` or Caffe' if start is None else
               'no "Train net output" or "Test net output" line after an "Iteration" line')
    return '%s holds no training lines (%s)' % (path_to_log, why)


def save_csv_files(logfile_path, output_dir, train_dict_list, test_dict_list, delimiter=',', verbose=False):
    """Writes output_dir/<basename of logfile_path>.train and .test (none for an empty list), both
    or neither."""
    base = os.path.join(output_dir, os.path.basename(logfile_path))
    tables = [(base + '.train', train_dict_list), (base + '.test', test_dict_list)]
    with contextlib.ExitStack() as stack:  # each file is renamed into place once both are written
        for filename, dict_list in tables:
            if dict_list:
                _write_rows(stack.enter_context(atomic_file.replacing(filename, 'w', newline='', **ENCODING)),
                            dict_list, delimiter)
    if verbose:
        for filename, dict_list in tables:
            print(('Wrote %s' if dict_list else 'Not writing %s; no lines to write') % filename)


def write_csv(output_filename, dict_list, delimiter, verbose=False):
    """Writes the rows as CSV (the excel dialect, "\\r\\n" line ends) with a header of their keys."""
    if not dict_list:
        if verbose:
            print('Not writing %s; no lines to write' % output_filename)
        return
    with atomic_file.replacing(output_filename, 'w', newline='', **ENCODING) as f:
        _write_rows(f, dict_list, delimiter)
    if verbose:
        print('Wrote %s' % output_filename)


def _write_rows(f, dict_list, delimiter):
    fieldnames = list(dict_list[0].keys())
    for row in dict_list[1:]:  # in a well-formed log every row has the first row's keys
        fieldnames.extend(key for key in row if key not in fieldnames)
    writer = csv.DictWriter(f, fieldnames=fieldnames, dialect='excel', delimiter=delimiter)
    writer.writeheader()
    writer.writerows(dict_list)


def _delimiter(text):
    if text == '\\t':
        return '\t'
    if len(text) != 1 or text in '"\r\n':
        raise argparse.ArgumentTypeError('the delimiter must be one character (or \\t), not %r' % text)
    return text


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        """A wrong command line as one line, usage included, and exit status 2."""
        usage = ' '.join(self.format_usage().split()[1:])
        self.exit(2, '%s: error: %s (usage: %s)\n' % (self.prog, message, usage))


def parse_args(argv=None):
    parser = _OneLineParser(
        description='Parse a training log into two CSV files (LOGFILE.train and LOGFILE.test in '
                    'OUTPUT_DIR) holding the training and test outputs.')
    parser.add_argument('logfile_path', metavar='LOGFILE', help='the log (the trainer writes it to stderr)')
    parser.add_argument('output_dir', metavar='OUTPUT_DIR', help='directory in which to write the CSV files')
    parser.add_argument('--verbose', action='store_true', help='name the files written (or not written)')
    parser.add_argument('--delimiter', default=',', type=_delimiter,
                        help="column delimiter, one character or \\t (default: '%(default)s')")
    return parser.parse_args(argv)


def _fail(message):
    print('parse_log.py: %s' % message, file=sys.stderr)
    return 1


def main(argv=None):
    args = parse_args(argv)
    if not os.path.exists(args.output_dir):
        return _fail('output directory %s does not exist (create it first)' % args.output_dir)
    if not os.path.isdir(args.output_dir):
        return _fail('output directory %s is not a directory' % args.output_dir)
    try:
        train_dict_list, test_dict_list = parse_log(args.logfile_path)
        if not train_dict_list and not test_dict_list:
            return _fail(no_training_lines(args.logfile_path))
    except OSError as error:
        return _fail('cannot read %s: %s' % (args.logfile_path, error.strerror))
    try:
        save_csv_files(args.logfile_path, args.output_dir, train_dict_list, test_dict_list,
                       delimiter=args.delimiter, verbose=args.verbose)
    except OSError as error:
        return _fail('cannot write %s: %s' % (error.filename or args.output_dir, error.strerror))
    return 0


if __name__ == '__main__':
    sys.exit(main())
