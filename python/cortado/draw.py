"""Network visualization: draw a NetParameter as a graph (pycaffe's
``caffe.draw``).

Layers become boxes (coloured by type; in-place layers green), blobs become
grey octagons, and edges run bottom blob -> layer -> top blob.  Graphs are
built with pydot and rendered by graphviz's ``dot`` program, which must be on
PATH for any format other than ``raw`` (the dot source, not laid out).

    from google.protobuf import text_format
    from cortado.proto import caffe_pb2
    import cortado.draw

    net = text_format.Merge(open('lenet_train_test.prototxt').read(),
                            caffe_pb2.NetParameter())
    cortado.draw.draw_net_to_file(net, 'lenet.png', 'LR', caffe_pb2.TRAIN)

Arguments shared by the drawing functions:

* ``rankdir`` -- graphviz's layout direction: 'LR' (left to right), 'RL',
  'TB' (top to bottom) or 'BT'.
* ``phase`` -- draw only the layers of one phase (caffe_pb2.TRAIN or TEST;
  the strings 'TRAIN'/'TEST' work too), judged by the phase of the layers'
  include/exclude rules; None (the default) or 'ALL' draws every layer.
* ``display_lrm`` -- add the weight and bias learning-rate multipliers to
  the labels of Convolution, Deconvolution and InnerProduct layers (default
  False).
"""

import errno
import os

import pydot

from .proto import caffe_pb2

__all__ = ['LAYER_STYLE_DEFAULT', 'NEURON_LAYER_STYLE', 'BLOB_STYLE',
           'get_pooling_types_dict', 'get_edge_label', 'get_layer_lr_mult',
           'get_layer_label', 'choose_color_by_layertype', 'layer_in_phase',
           'get_pydot_graph', 'draw_net', 'draw_net_to_file']

_DEFAULT_LAYER_COLOR = '#6495ED'

# Node attributes of ordinary layers, of in-place layers and of blobs.
LAYER_STYLE_DEFAULT = {'shape': 'record',
                       'fillcolor': _DEFAULT_LAYER_COLOR,
                       'style': 'filled'}
NEURON_LAYER_STYLE = {'shape': 'record',
                      'fillcolor': '#90EE90',
                      'style': 'filled'}
BLOB_STYLE = {'shape': 'octagon',
              'fillcolor': '#E0E0E0',
              'style': 'filled'}

_LAYER_COLORS = {'Convolution': '#FF5050',
                 'Deconvolution': '#FF5050',
                 'Pooling': '#FF9900',
                 'InnerProduct': '#CC33FF'}

# Layers with learned weights: the message holding num_output for each.
_LEARNING_LAYERS = {'Convolution': 'convolution_param',
                    'Deconvolution': 'convolution_param',
                    'InnerProduct': 'inner_product_param'}

# dot's quoted empty string: an edge without a label
_NO_LABEL = '""'

# Formats that need no graphviz run.
_RAW_FORMATS = ('raw',)

_RANKDIRS = ('LR', 'RL', 'TB', 'BT')


def _check_arguments(caffe_net, rankdir):
    """A NetParameter (not a cortado.Net or a file name; from any module
    generated from the schema) and one of graphviz's four directions."""
    descriptor = getattr(caffe_net, 'DESCRIPTOR', None)
    if getattr(descriptor, 'name', None) != 'NetParameter':
        raise TypeError('the net to draw must be a NetParameter '
                        '(text_format.Parse(open(prototxt).read(), '
                        'caffe_pb2.NetParameter())), not %s'
                        % type(caffe_net).__name__)
    if rankdir not in _RANKDIRS:
        raise ValueError('Unknown rankdir %r (use one of %s)'
                         % (rankdir, ', '.join(_RANKDIRS)))


def _escape(text, record=False):
    """Escape text for a double-quoted dot string; for record-shaped nodes
    also escape the characters that structure record labels."""
    text = text.replace('\\', '\\\\').replace('"', '\\"')
    if record:
        for ch in '{}|<>':
            text = text.replace(ch, '\\' + ch)
    return text.replace('\n', '\\n')


def _node_id(text):
    # Quoted, so that names with ':' are not taken as node ports.
    return '"%s"' % _escape(text)


def get_pooling_types_dict():
    """The pooling methods of PoolingParameter by number: {0: 'MAX', 1:
    'AVE', 2: 'STOCHASTIC'}."""
    methods = caffe_pb2.PoolingParameter.PoolMethod.DESCRIPTOR.values
    return {method.number: method.name for method in methods}


def get_edge_label(layer):
    """The label of the edges leaving ``layer``: 'Batch <batch_size>' for a
    Data layer, num_output for Convolution, Deconvolution and InnerProduct,
    otherwise an empty label."""
    if layer.type == 'Data':
        return 'Batch %d' % layer.data_param.batch_size
    message = _LEARNING_LAYERS.get(layer.type)
    if message is None:
        return _NO_LABEL
    return str(getattr(layer, message).num_output)


def get_layer_lr_mult(layer):
    """The ``(weights, biases)`` learning-rate multipliers of a Convolution,
    Deconvolution or InnerProduct layer, from its first and second ``param``
    entries; a missing entry or an unset lr_mult counts as 1.0.

    Raises ValueError for other layer types and for more than two ``param``
    entries.
    """
    if layer.type not in _LEARNING_LAYERS:
        raise ValueError('no learning rate multiplier to show for %s layers'
                         % layer.type)
    if len(layer.param) > 2:
        raise ValueError('layer %r has %d param entries; expected at most '
                         'two (weights, biases) to read lr_mult from'
                         % (layer.name, len(layer.param)))
    mults = [1.0, 1.0]
    for index, spec in enumerate(layer.param):
        if spec.HasField('lr_mult'):
            mults[index] = spec.lr_mult
    return tuple(mults)


def _first_or(values, fallback):
    return values[0] if len(values) else fallback


def _window(layer):
    """Kernel size, stride and pad (of the first spatial axis) of a
    Convolution, Deconvolution or Pooling layer; None for other types."""
    if layer.type == 'Pooling':
        pool = layer.pooling_param
        return (pool.kernel_size or pool.kernel_h,
                pool.stride_h if pool.HasField('stride_h') else pool.stride,
                pool.pad or pool.pad_h)
    if layer.type in ('Convolution', 'Deconvolution'):
        conv = layer.convolution_param
        return (_first_or(conv.kernel_size,
                          conv.kernel_h if conv.HasField('kernel_h') else 1),
                _first_or(conv.stride,
                          conv.stride_h if conv.HasField('stride_h') else 1),
                _first_or(conv.pad, conv.pad_h))
    return None


def get_layer_label(layer, rankdir, display_lrm=False):
    """The dot label (quoted) of the node for ``layer``: its name, its type
    (with the method for pooling), the kernel size, stride and pad of
    convolution and pooling layers, and with ``display_lrm`` the
    learning-rate multipliers unless both are zero.

    Top-to-bottom layouts ('TB', 'BT') put the parts side by side; other
    ``rankdir`` values stack them on separate lines.
    """
    joiner = ' ' if rankdir in ('TB', 'BT') else '\n'
    if layer.type == 'Pooling':
        pool = layer.pooling_param.pool
        kind = '(Pooling %s)' % get_pooling_types_dict().get(pool, str(pool))
    else:
        kind = '(%s)' % layer.type
    parts = [layer.name, kind]

    window = _window(layer)
    if window is not None:
        parts.append(joiner.join(
            '%s: %d' % item
            for item in zip(('kernel size', 'stride', 'pad'), window)))

    if display_lrm and layer.type in _LEARNING_LAYERS:
        weights, biases = get_layer_lr_mult(layer)
        if weights or biases:
            parts.append('lr mult: %.1f, %.1f' % (weights, biases))

    # quoted as a whole: dot would read an unquoted ':' as a port separator
    return '"%s"' % _escape(joiner.join(parts), record=True)


def choose_color_by_layertype(layertype):
    """The fill colour of a layer node: red for (de)convolutions, orange for
    pooling, purple for inner products, blue for everything else."""
    return _LAYER_COLORS.get(layertype, _DEFAULT_LAYER_COLOR)


def _phase_value(phase):
    if isinstance(phase, str):
        name = phase.upper()
        if name == 'ALL':
            return None
        if name not in caffe_pb2.Phase.keys():
            raise ValueError('Unknown phase: %s (use TRAIN, TEST or ALL)'
                             % phase)
        return caffe_pb2.Phase.Value(name)
    return phase


def layer_in_phase(layer, phase):
    """Whether ``layer`` is part of the net in ``phase`` (None: always).

    A layer without include rules is included unless an exclude rule
    matches; with include rules it is included when one matches.  A rule
    matches when it names this phase or names no phase (levels and stages
    are not known here and are ignored).  Raises ValueError for a layer with
    both include and exclude rules, which Caffe rejects.
    """
    phase = _phase_value(phase)
    if phase is None:
        return True
    if len(layer.include) > 0 and len(layer.exclude) > 0:
        raise ValueError('layer %r has both include and exclude rules; '
                         'Caffe accepts only one kind' % layer.name)

    def matches(rule):
        return not rule.HasField('phase') or rule.phase == phase

    if len(layer.include) > 0:
        return any(matches(rule) for rule in layer.include)
    return not any(matches(rule) for rule in layer.exclude)


def _is_in_place(layer):
    return len(layer.bottom) == 1 and list(layer.top) == list(layer.bottom)


def _layer_style(layer):
    if _is_in_place(layer):
        return dict(NEURON_LAYER_STYLE)
    style = dict(LAYER_STYLE_DEFAULT)
    style['fillcolor'] = choose_color_by_layertype(layer.type)
    return style


def _blob_node(blob):
    return pydot.Node(_node_id(blob), label=_node_id(blob), **BLOB_STYLE)


def get_pydot_graph(caffe_net, rankdir, label_edges=True, phase=None,
                    display_lrm=False):
    """The pydot.Dot graph of the NetParameter ``caffe_net``.

    Layer nodes are named ``"<layer name> (<type>)"`` and blob nodes
    ``"<blob name>"``; both carry their text in the ``label`` attribute.
    Edges leaving a layer are labelled by get_edge_label unless
    ``label_edges`` is False.  ``rankdir``, ``phase`` and ``display_lrm``
    are described in the module docstring.
    """
    _check_arguments(caffe_net, rankdir)
    graph = pydot.Dot(_node_id(caffe_net.name or 'Net'),
                      graph_type='digraph', rankdir=rankdir)
    # Each node once, in order of first appearance (a blob seen again only
    # replaces its node object); edges as (source, target, label).
    nodes = {}
    links = []
    for layer in caffe_net.layer:
        if not layer_in_phase(layer, phase):
            continue
        title = '%s (%s)' % (layer.name, layer.type)
        layer_key = ('layer', title)
        nodes[layer_key] = pydot.Node(
            _node_id(title),
            label=get_layer_label(layer, rankdir, display_lrm=display_lrm),
            **_layer_style(layer))
        for blob in layer.bottom:
            nodes[('blob', blob)] = _blob_node(blob)
            links.append((('blob', blob), layer_key, _NO_LABEL))
        out_label = get_edge_label(layer) if label_edges else _NO_LABEL
        for blob in layer.top:
            nodes[('blob', blob)] = _blob_node(blob)
            links.append((layer_key, ('blob', blob), out_label))
    for node in nodes.values():
        graph.add_node(node)
    for source, target, label in links:
        graph.add_edge(pydot.Edge(nodes[source], nodes[target], label=label))
    return graph


def draw_net(caffe_net, rankdir, ext='png', phase=None, display_lrm=False):
    """Render ``caffe_net`` and return the image as bytes.

    ``ext`` is the output format, any that graphviz's dot knows ('png' by
    default, 'svg', 'pdf', 'dot', ...; case does not matter), or 'raw' for
    the dot source without running graphviz.  ``rankdir``, ``phase`` and
    ``display_lrm`` are described in the module docstring.

    Raises ValueError for an unknown format, RuntimeError when graphviz
    fails, OSError when ``dot`` is not installed.
    """
    graph = get_pydot_graph(caffe_net, rankdir, phase=phase,
                            display_lrm=display_lrm)
    ext = ext.lower()
    if ext in _RAW_FORMATS:
        return graph.to_string().encode('utf-8')
    if ext not in graph.formats:
        raise ValueError('Unknown output format %r (use one of %s, or raw)'
                         % (ext, ', '.join(sorted(set(graph.formats)))))
    try:
        return graph.create(format=ext)
    except AssertionError as e:  # pydot's way of reporting a dot failure
        raise RuntimeError('graphviz failed to render the graph: %s' % e)


def draw_net_to_file(caffe_net, filename, rankdir='LR', phase=None,
                     display_lrm=False):
    """Render ``caffe_net`` into the file ``filename``, in the format that
    its extension names ('.png', '.svg', ...; '.raw' writes the dot source,
    for feeding to graphviz by hand).  ``rankdir``, ``phase`` and
    ``display_lrm`` are described in the module docstring.

    Raises ValueError when ``filename`` has no extension or an unknown one,
    and the errors of draw_net; the file is written only once the image is
    rendered, through a temporary file renamed over ``filename``, so a
    failure leaves no file behind and an existing one as it was.
    """
    extension = os.path.splitext(filename)[1]
    if not extension:
        raise ValueError('Output file name %r has no extension naming the '
                         'image format (e.g. .png, .svg, .pdf, .raw)'
                         % filename)
    directory = os.path.dirname(filename) or os.curdir
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, 'No such directory %r to write'
                                % directory, filename)
    image = draw_net(caffe_net, rankdir, extension[1:], phase, display_lrm)
    temporary = '%s.tmp-%d' % (filename, os.getpid())
    try:
        with open(temporary, 'wb') as out:
            out.write(image)
        os.replace(temporary, filename)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
