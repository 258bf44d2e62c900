#!/usr/bin/env python3
"""
Draw a graph of the net architecture (pycaffe's python/draw_net.py).

    draw_net.py input_net_proto_file output_image_file
                [--rankdir LR] [--phase TRAIN|TEST|ALL] [--display_lrm]

The output format follows the output file's extension (.png, .svg, .pdf, ...;
.raw writes the dot source); the file is written whole or not at all.  Exits
0 on success, 1 with a one-line message on an unreadable/invalid input (or
one without layers) or a drawing failure, 2 with a one-line message on bad
arguments.
"""
import os
import sys
from argparse import ArgumentParser, ArgumentDefaultsHelpFormatter

PROG = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else \
    'draw_net.py'


def _fail(message):
    sys.stderr.write('%s: error: %s\n' % (PROG, message))
    sys.exit(1)


def _import_cortado():
    """Import the cortado package: from PYTHONPATH / site-packages first
    (this script's own directory is searched last, so that a source-tree
    python/cortado/ does not shadow the built package), then from the
    directory holding this script."""
    here = os.path.dirname(os.path.abspath(__file__))
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path
                   if os.path.abspath(p or os.curdir) != here]
    sys.path.append(here)
    try:
        import cortado as caffe
        import cortado.draw
        from cortado.proto import caffe_pb2
    except ImportError as e:
        sys.path[:] = saved
        _fail('cannot import the cortado package (%s); put the directory '
              'that holds it on PYTHONPATH' % e)
    return caffe, caffe_pb2


class _OneLineParser(ArgumentParser):
    def error(self, message):
        """A wrong command line as one line, usage included; exit 2."""
        usage = ' '.join(self.format_usage().split()[1:])
        self.exit(2, '%s: error: %s (usage: %s)\n' % (self.prog, message,
                                                       usage))


def parse_args(argv=None):
    """The command line (``argv``, or sys.argv[1:] when None) as an
    argparse namespace."""
    parser = _OneLineParser(description=__doc__.strip().splitlines()[0],
                            formatter_class=ArgumentDefaultsHelpFormatter)
    parser.add_argument('input_net_proto_file',
                        help='the net to draw, a NetParameter in prototxt '
                             'form')
    parser.add_argument('output_image_file',
                        help='where to write the drawing; its extension '
                             'selects the format')
    parser.add_argument('--rankdir', default='LR', type=str.upper,
                        choices=['LR', 'TB', 'RL', 'BT'],
                        help=('graphviz layout direction: LR draws the net '
                              'from left to right, TB from top to bottom '
                              '(RL and BT reverse them); see '
                              'https://graphviz.org/docs/attrs/rankdir/'))
    parser.add_argument('--phase', default='ALL', type=str.upper,
                        choices=['TRAIN', 'TEST', 'ALL'],
                        help=('draw the layers of the TRAIN or the TEST net '
                              'only, or ALL layers whatever their phase'))
    parser.add_argument('--display_lrm', action='store_true',
                        help=('show the weight and bias learning-rate '
                              'multipliers of Convolution, Deconvolution '
                              'and InnerProduct layers (omitted when both '
                              'are zero)'))
    return parser.parse_args(argv)


def _read_net(path, caffe_pb2):
    """Parse the prototxt at ``path`` into a NetParameter; exits with a
    message when it cannot be read or parsed."""
    from google.protobuf import text_format
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        _fail('cannot read %s: %s' % (path, e.strerror or e))
    except UnicodeDecodeError as e:
        _fail('%s is not a text prototxt (byte %d is not UTF-8)'
              % (path, e.start))
    net = caffe_pb2.NetParameter()
    try:
        text_format.Merge(text, net)
    except text_format.ParseError as e:
        _fail('%s is not a valid net prototxt: %s' % (path, e))
    if not net.layer:
        _fail('%s holds no `layer` entries: nothing to draw%s'
              % (path, ' (V1 `layers` are not drawn)' if len(net.layers) else ''))
    return net


def main(argv=None):
    args = parse_args(argv)
    caffe, caffe_pb2 = _import_cortado()
    net = _read_net(args.input_net_proto_file, caffe_pb2)
    phase = None if args.phase == 'ALL' else caffe_pb2.Phase.Value(args.phase)

    out = args.output_image_file
    folder = os.path.dirname(out) or '.'
    if os.path.isdir(out):
        _fail('%s is a directory; name the image file, e.g. %s'
              % (out, os.path.join(out, 'net.png')))
    if not os.path.isdir(folder):
        _fail('cannot write %s: no directory %s' % (out, folder))
    extension = os.path.splitext(out)[1]
    if not extension:
        _fail('%s has no extension naming the image format (e.g. .png, '
              '.svg, .pdf, .raw)' % out)

    print('Drawing net to %s' % out)
    try:
        # Written to a temporary file and renamed over `out` (draw.py).
        caffe.draw.draw_net_to_file(net, out, args.rankdir, phase,
                                    args.display_lrm)
    except OSError as e:
        _fail('cannot draw %s: %s' % (out, e.strerror or e))
    except (ValueError, RuntimeError) as e:
        first_line = str(e).splitlines()[0] if str(e) else type(e).__name__
        _fail('cannot draw %s: %s' % (out, first_line))
    return 0


if __name__ == '__main__':
    sys.exit(main())
