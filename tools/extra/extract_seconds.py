#!/usr/bin/env python3
"""extract_seconds.py: when each line of a training log was written, in seconds since training began.

    extract_seconds.py INPUT OUTPUT

writes to OUTPUT one number ("%f") per line of the log INPUT that mentions "Iteration": the seconds
between that line and the solver's start (its "Solving <net>" line), as Caffe's tool of the same name.

The module also holds the date arithmetic that parse_log.py uses. A glog line begins with a prefix
such as "I1126 23:59:58.123456  1234 solver.cpp:349] "; the date in it has no year, so the year is
the one in which the file was created (its ctime, as Caffe takes it), plus one each time the month
goes backwards (a run across new year). Newer glog writes the year ("I20261126 23:59:58.123456 ...");
then the prefix's own year is used. Lines without such a prefix (a blank line, an error from the
shell or mpirun) are skipped, and a log without a "Solving" line counts from its first glog line.

OUTPUT is written whole or not at all (atomic_file.py). A log without a glog line that mentions
"Iteration" (empty, not a glog log, or a run that stopped before its first iteration) is an error, as
are a log that cannot be read and an OUTPUT that cannot be written: one line on stderr, exit status 1.
"""
import datetime
import os
import re
import sys

import atomic_file

START_MARKER = 'Solving'   # the solver's first line, "Solving <net name>"
ITERATION_MARKER = 'Iteration'

# A prefix with the year: the severity letter and YYYYMMDD.
_DATED_HEAD = re.compile(r'[IWEF][0-9]{8}')


def _read_prefix(line, year):
    """The datetime in a glog line's prefix and whether the prefix carried its own year.

    A prefix without the year is read as Caffe reads it: the first word's characters 1-2 are the month
    and the rest the day; the second word is H:M:S.micro. Where that fails and the first word is a
    letter and eight digits, it is YYYYMMDD.
    """
    words = line.split()
    if len(words) < 2:
        raise ValueError('not a glog line: %r' % line)
    head, clock = words[0], words[1]
    dot = clock.rfind('.')
    if dot < 0:
        raise ValueError('no H:M:S.micro time in %r' % line)
    hms = [int(part) for part in clock[:dot].split(':')]
    if len(hms) < 3:
        raise ValueError('no H:M:S.micro time in %r' % line)
    micro = int(clock[dot + 1:])
    try:
        return datetime.datetime(year, int(head[1:3]), int(head[3:]), hms[0], hms[1], hms[2], micro), False
    except ValueError:
        if not _DATED_HEAD.fullmatch(head):
            raise
    stamp = datetime.datetime(int(head[1:5]), int(head[5:7]), int(head[7:9]), hms[0], hms[1], hms[2], micro)
    return stamp, True


def _read_stamp(line, year):
    """(datetime, whether the prefix carried its own year) of a glog line; ValueError otherwise."""
    try:
        return _read_prefix(line, year)
    except OverflowError as error:  # a number too large for datetime: not a glog prefix either
        raise ValueError(str(error)) from None


def _stamp_or_none(line, year):
    try:
        return _read_stamp(line, year)[0]
    except ValueError:
        return None


def extract_datetime_from_line(line, year):
    """The datetime in the glog prefix of line; a prefix without a year takes `year`.

    Raises ValueError where the line has no glog prefix.
    """
    return _read_stamp(line, year)[0]


def get_log_created_year(input_file):
    """The year in which input_file was created, by its ctime (local time), as Caffe takes it."""
    return datetime.datetime.fromtimestamp(os.path.getctime(input_file)).year


def find_start(line_iterable, year):
    """(start, found): the time of the first glog line holding "Solving", found = True; else the
    time of the first glog line (None when there is none), found = False.

    Reads line_iterable only up to the "Solving" line, so that a file's iteration goes on after it.
    """
    first = None
    for line in line_iterable:
        if START_MARKER in line:
            stamp = _stamp_or_none(line, year)
            if stamp is not None:
                return stamp, True
        if first is None:
            first = _stamp_or_none(line, year)
    return first, False


def get_start_time(line_iterable, year):
    """The time at which the solver started: that of the first "Solving" line or, in a log without
    one, of the first glog line; None when the lines hold no glog line at all."""
    return find_start(line_iterable, year)[0]


class LogClock:
    """Reads the dates of a log's lines in order from the start: a prefix without the year takes the
    running year, which steps on by one whenever the month goes backwards (Dec -> Jan)."""

    def __init__(self, year, start):
        self.year = year
        self.last = start

    def read(self, line):
        """The datetime of a glog line; ValueError for any other line."""
        stamp, dated = _read_stamp(line, self.year)
        if dated:
            self.year = stamp.year
        elif self.last is not None and stamp.month < self.last.month:
            stamp = _read_stamp(line, self.year + 1)[0]
            self.year += 1
        self.last = stamp
        return stamp


def extract_seconds(input_file, output_file):
    """Writes to output_file the seconds since the start of every glog line of input_file that
    mentions "Iteration", one "%f" a line. ValueError, before anything is written, where there is
    no such line."""
    year = get_log_created_year(input_file)
    with open(input_file, encoding='utf-8', errors='replace') as f:
        lines = f.readlines()
    start, _ = find_start(lines, year)
    if start is None:
        why = 'the file is empty' if not lines else 'no glog line: it is not a log of `trainer train` or Caffe'
        raise ValueError('%s holds no training lines (%s)' % (input_file, why))
    clock = LogClock(year, start)
    seconds = []
    for line in lines:
        if ITERATION_MARKER not in line:
            continue
        try:
            stamp = clock.read(line)
        except ValueError:
            continue
        seconds.append('%f\n' % (stamp - start).total_seconds())
    if not seconds:
        raise ValueError('%s holds no training lines (no glog line mentions "%s")'
                         % (input_file, ITERATION_MARKER))
    with atomic_file.replacing(output_file) as out:
        out.writelines(seconds)


def main(argv):
    if len(argv) != 3:
        print('Usage: extract_seconds.py INPUT OUTPUT (writes the seconds since the solver started of each '
              '"Iteration" line of the log INPUT)', file=sys.stderr)
        return 1
    try:
        extract_seconds(argv[1], argv[2])
    except OSError as error:
        print('extract_seconds.py: %s: %s' % (error.filename or argv[1], error.strerror), file=sys.stderr)
        return 1
    except ValueError as error:
        print('extract_seconds.py: %s' % error, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
